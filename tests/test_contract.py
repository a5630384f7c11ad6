"""The plug-in kernel's contract, checked on every benchmark the package ships.

Each metric is defined once: a task's headline value (``aggregate``, which may keep a published
leaderboard's own arithmetic) equals the ratio of the per-sample sums its intervals are built
from (``linearise`` then ``compute``), on every task of every built-in benchmark, under every
profile, for answers good, bad and unreadable. Profiles name a variant of every declared rule.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark, Profile, Rule
from medvidbench.core.evaluation import _inputs
from medvidbench.core.judge.cache import Judgement
from medvidbench.core.scoring import Context, TaskResult
from medvidbench.core.statistics import point_values

BUILT_IN = ("mcqa-demo", "medsg", "medvidbench")
ARCHETYPES = {  # per benchmark: answers good, bad and unreadable
    "medvidbench": ("strong", "weak", "format-noisy", "garbage"),
    "medsg": ("strong", "prose", "truncated", "scaled-1000"),
    "mcqa-demo": ("strong", "verbose", "guesser", "garbage"),
}


@pytest.fixture(scope="module")
def demo_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, dict[str, Path]]]:
    out = {}
    for slug in BUILT_IN:
        bench = benchmarks.get(slug)
        assert bench.demo is not None
        files = bench.demo.synthesise(tmp_path_factory.mktemp(slug), 300, 5)
        out[slug] = (bench.load_ground_truth(files["ground_truth"]), files)
    return out


def _fake_judgements(requests: Any, codes: tuple[str, ...]) -> dict[str, Judgement]:
    """A deterministic 1-5 score per aspect for each request (no network)."""
    out = {}
    for r in requests:
        digest = hashlib.sha256(r.key.encode()).digest()
        scores = {c: 1 + digest[i] % 5 for i, c in enumerate(codes)}
        out[r.key] = Judgement(scores, "fake", 0, 0, "2026-01-01T00:00:00Z")
    return out


def _results(bench: Benchmark, gt: Any, predictions: Path, profile: Profile) -> Iterator[Any]:
    """(scorer, task result) of every task, rule-based and judged, the judged with fake
    judgements."""
    matched = bench.validate_submission(predictions, gt)
    by_task: dict[str, list[int]] = {}
    for s in gt.samples:
        by_task.setdefault(s.task, []).append(s.index)
    ctx = Context(embedder_factory=bench.embedder, options=dict(matched.options))
    for task, scorer in bench.scorers().items():
        if task in by_task and matched.report.coverage[task].status == "complete":
            yield scorer, scorer.evaluate(*_inputs(task, gt, matched, by_task), profile, ctx)
    if bench.judging is None:
        return
    for task, judged in bench.judged_scorers().items():
        if task in by_task and matched.report.coverage[task].status == "complete":
            plan = judged.plan(*_inputs(task, gt, matched, by_task), profile, "contract-test")
            answers = _fake_judgements(plan.requests, bench.judging.rubric.codes)
            yield judged, judged.aggregate(plan, answers, profile)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("slug", BUILT_IN)
def test_every_metric_is_defined_once_aggregate_equals_its_sums(
    slug: str, demo_sets: dict[str, tuple[Any, dict[str, Path]]]
) -> None:
    bench = benchmarks.get(slug)
    gt, files = demo_sets[slug]
    checked: set[str] = set()
    per_dataset = 0
    for profile in bench.profiles:
        for archetype in ARCHETYPES[slug]:
            for scorer, result in _results(bench, gt, files[archetype], profile):
                assert isinstance(result, TaskResult)
                from_sums = scorer.compute(result.samples, profile)
                assert from_sums == point_values(
                    scorer.linearise(result.samples, profile), scorer.metric_keys
                )
                for key in scorer.metric_keys:
                    assert _same(result.metrics[key], from_sums[key]), (
                        slug,
                        profile.name,
                        archetype,
                        key,
                        result.metrics[key],
                        from_sums[key],
                    )
                    checked.add(key)
                per_dataset += _per_dataset_agrees(
                    scorer, result, profile, (slug, profile.name, archetype)
                )
    produced = {m.key for m in bench.metrics if m.task}
    assert produced <= checked, f"{slug}: metrics never checked: {sorted(produced - checked)}"
    if slug != "medsg":  # MedSG-Bench reports no per-dataset breakdown
        assert per_dataset > 0, f"{slug}: no per-dataset value compared"


def _per_dataset_agrees(
    scorer: Any, result: TaskResult, profile: Profile, where: tuple[str, ...]
) -> int:
    """Each dataset's values too are the sums' ratios over that dataset's samples; a dataset
    none of whose samples has a value shows none (a task's headline may still count it as 0,
    as MedVidBench's leaderboard-v1 DVC does). Returns how many values it compared."""
    compared = 0
    for dataset, shown in result.per_dataset.items():
        mine = [r for r in result.samples if r.dataset == dataset]
        from_sums = scorer.compute(mine, profile)
        for key in scorer.metric_keys:
            if key in shown and shown[key] is None:
                assert not [r for r in mine if r.values and r.values.get(key) is not None], where
            elif key in shown:
                assert _same(shown[key], from_sums[key]), (
                    *where,
                    dataset,
                    key,
                    shown[key],
                    from_sums[key],
                )
                compared += 1
    return compared


@pytest.mark.parametrize("slug", ["medsg", "medvidbench"])
def test_every_profile_names_a_declared_variant_of_every_rule(slug: str) -> None:
    """Two-profile benchmarks: each profile is a distinct pick of named variants (the
    one-profile MCQA-Demo reports its extraction pair side by side instead)."""
    bench = benchmarks.get(slug)
    assert bench.rules, f"{slug} declares no named rule"
    for profile in bench.profiles:
        for rule in bench.rules:
            assert profile.variant(rule.name) in rule.variants
    picks = {tuple(p.variant(r.name) for r in bench.rules) for p in bench.profiles}
    assert len(picks) == len(bench.profiles) == 2


def test_a_profile_naming_an_undeclared_rule_or_variant_is_refused() -> None:
    base = benchmarks.get("mcqa-demo")
    for variants in ((("extraction", "psychic"),), (("rounding", "up"),)):
        with pytest.raises(ValueError, match="does not declare"):
            Benchmark(
                slug="broken",
                title="Broken",
                version="0",
                scorer_version="0",
                tasks=base.tasks,
                metrics=base.metrics,
                profiles=(Profile("p", "d", variants),),
                testset=base.testset,
                scorers=base.scorers,
                rules=(Rule("extraction", ("strict-match", "flexible-extract")),),
            )


def test_a_rule_left_out_of_a_profile_takes_its_default() -> None:
    rule = Rule("extraction", ("strict-match", "flexible-extract"))
    assert Profile("p", "d").with_defaults([rule]).variant("extraction") == "strict-match"
    with pytest.raises(KeyError, match="no variant of rule 'rounding'"):
        Profile("p", "d").variant("rounding")
