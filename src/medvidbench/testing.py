"""The conformance kit: the plug-in contract's checks, on any benchmark, installed or not.

``check_benchmark(definition, folder)`` runs every check the kernel and its capabilities
promise and returns what fails, each as one sentence (an empty list: the benchmark conforms);
``assert_conforms`` raises with all of them. A plug-in's own test suite calls it on its
definition; this repository's suite calls it on every installed benchmark
(``tests/test_contract.py``). The checks:

- the kernel: a valid slug; tasks and metrics named once; each scorer for a declared task,
  producing only declared metrics; every task scored (by rules or by a judge);
- its demo data (needed to exercise it): every archetype's file valid against the test set;
- the kernel's coverage rules through its own matcher: a task answered in part, or a file
  answering nothing, refused (with a matcher that checks nothing, since the kernel must);
- each metric defined once: every task's headline value, and each dataset's, equals the ratio
  of the per-sample sums its intervals are built from, under every profile, on every
  archetype (judged tasks with made-up judgements, no network);
- a ``perfect`` archetype reaches every metric's best value under at least one profile (a
  published profile may keep a published quirk; a broken scorer reaches it under none);
- clusters: ``cluster_of`` names a cluster for every item;
- rewards: the row codec gives each item back, and a task reward's ``mean_of`` metrics are the
  mean of its ``score`` over the task's samples.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from medvidbench.core.benchmark import Benchmark, Profile
from medvidbench.core.evaluation import evaluate
from medvidbench.core.judge.cache import Judgement
from medvidbench.core.scoring import Context, TaskResult
from medvidbench.core.submission import MatchedSubmission, TaskCoverage, ValidationReport

__all__ = ["assert_conforms", "check_benchmark"]

SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")


def assert_conforms(definition: Benchmark, folder: Path, samples: int = 120, seed: int = 3) -> None:
    """Raise ``AssertionError`` listing every way ``definition`` breaks the contract."""
    problems = check_benchmark(definition, folder, samples, seed)
    if problems:
        raise AssertionError(
            f"benchmark {definition.slug!r} does not conform:\n- " + "\n- ".join(problems)
        )


def check_benchmark(
    definition: Benchmark, folder: Path, samples: int = 120, seed: int = 3
) -> list[str]:
    """Every way ``definition`` breaks the contract, each in one sentence; its demo data (of
    ``samples`` items, drawn with ``seed``) is written under ``folder``."""
    found = _kernel(definition)
    if definition.demo is None:
        return [*found, "no demo data (DemoData): the kit needs a test set and archetypes"]
    files = definition.demo.synthesise(folder, samples, seed)
    missing = [a for a in ("ground_truth", *definition.demo.archetypes) if a not in files]
    if missing:
        return [*found, f"the demo data lacks {', '.join(missing)}"]
    gt = definition.load_ground_truth(files["ground_truth"])
    matched = {a: definition.validate_submission(files[a], gt) for a in definition.demo.archetypes}
    found += [
        f"archetype {a!r} is not a valid file: {m.report.errors.items[0].message}"
        for a, m in matched.items()
        if not m.report.ok
    ]
    if found:
        return found
    first = files[definition.demo.archetypes[0]]
    found += _coverage_rules(definition, gt, first)
    found += _agreement(definition, gt, matched)
    found += _perfect(definition, gt, matched)
    found += _clusters(definition, gt)
    found += _rewards(definition, gt, matched)
    return found


# --- the kernel ---------------------------------------------------------------------------


def _kernel(definition: Benchmark) -> list[str]:
    found = []
    if not SLUG.fullmatch(definition.slug):
        found.append(f"slug {definition.slug!r} is not lowercase letters, digits and hyphens")
    tasks = [t.name for t in definition.tasks]
    keys = [m.key for m in definition.metrics]
    for what, names in (("task", tasks), ("metric", keys)):
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            found.append(f"{what}s named twice: {', '.join(twice)}")
    scorers: dict[str, Any] = dict(definition.scorers())
    judged: dict[str, Any] = dict(definition.judged_scorers())
    for kind, table in (("scorer", scorers), ("judged scorer", judged)):
        for task, scorer in table.items():
            if task not in tasks:
                found.append(f"a {kind} for {task!r}, which is not a declared task")
            extra = sorted(set(scorer.metric_keys) - set(keys))
            if extra:
                found.append(f"the {task!r} {kind} produces undeclared metrics: {extra}")
    unscored = [t for t in tasks if t not in scorers and t not in judged]
    if unscored:
        found.append(f"tasks with no scorer: {', '.join(unscored)}")
    return found


# --- the kernel's coverage rules ----------------------------------------------------------


class _Careless:
    """A test-set format that matches every answer and checks nothing (a plug-in's bug)."""

    def __init__(self, inner: Any, drop: set[int]) -> None:
        self.inner, self.drop = inner, drop

    def load_ground_truth(self, source: Any, max_bytes: int | None = None) -> Any:
        return self.inner.load_ground_truth(source, max_bytes)

    def load_questions(self, source: Any, max_bytes: int | None = None) -> Any:
        return self.inner.load_questions(source, max_bytes)

    def validate_submission(
        self, source: Any, test_set: Any, max_bytes: int | None = None, name: str = ""
    ) -> MatchedSubmission:
        matched = self.inner.validate_submission(source, test_set, max_bytes, name)
        kept = [None if i in self.drop else p for i, p in enumerate(matched.predictions)]
        report = ValidationReport("careless", matched.report.sha256, 0)
        report.coverage = {  # it claims every task complete
            t: TaskCoverage(t, c.expected, c.expected) for t, c in matched.report.coverage.items()
        }
        return MatchedSubmission(report, kept)


def _coverage_rules(definition: Benchmark, gt: Any, source: Path) -> list[str]:
    found = []
    partial = dataclasses.replace(definition, testset=_Careless(definition.testset, {0}))
    codes = {p.code for p in partial.validate_submission(source, gt).report.errors.items}
    if "incomplete-task" not in codes:
        found.append("a task answered in part is not refused (incomplete-task)")
    empty = dataclasses.replace(
        definition, testset=_Careless(definition.testset, set(range(len(gt))))
    )
    codes = {p.code for p in empty.validate_submission(source, gt).report.errors.items}
    if codes != {"no-predictions"}:
        found.append(f"a file answering nothing gives {sorted(codes)}, not no-predictions")
    return found


# --- each metric defined once ---------------------------------------------------------------


def _fake_judgements(requests: Any, codes: Sequence[str]) -> dict[str, Judgement]:
    """A made-up 1-5 score per aspect for each request, the same for the same request."""
    out = {}
    for r in requests:
        digest = hashlib.sha256(r.key.encode()).digest()
        scores = {c: 1 + digest[i % len(digest)] % 5 for i, c in enumerate(codes)}
        out[r.key] = Judgement(scores, "fake", 0, 0, "2026-01-01T00:00:00Z")
    return out


def _inputs(task: str, gt: Any, matched: MatchedSubmission) -> tuple[list[Any], list[Any]]:
    items = [s for s in gt.samples if s.task == task]
    return items, [matched.predictions[s.index] or "" for s in items]


def _results(
    definition: Benchmark, gt: Any, matched: MatchedSubmission, profile: Profile
) -> Iterator[tuple[Any, TaskResult]]:
    """(scorer, result) of every complete task, judged ones with made-up judgements."""
    ctx = Context(embedder_factory=definition.embedder, options=dict(matched.options))
    complete = {t for t, c in matched.report.coverage.items() if c.status == "complete"}
    for task, scorer in definition.scorers().items():
        if task in complete:
            yield scorer, scorer.evaluate(*_inputs(task, gt, matched), profile, ctx)
    if definition.judging is None:
        return
    for task, judged in definition.judged_scorers().items():
        if task in complete:
            plan = judged.plan(*_inputs(task, gt, matched), profile, "conformance")
            answers = _fake_judgements(plan.requests, definition.judging.rubric.codes)
            yield judged, judged.aggregate(plan, answers, profile)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def _agreement(definition: Benchmark, gt: Any, matched: dict[str, MatchedSubmission]) -> list[str]:
    found: list[str] = []
    checked: set[str] = set()
    for profile in definition.profiles:
        for archetype, m in matched.items():
            for scorer, result in _results(definition, gt, m, profile):
                where = f"{profile.name}, {archetype}, {result.task}"
                sums = scorer.compute(result.samples, profile)
                for key in scorer.metric_keys:
                    checked.add(key)
                    if not _same(result.metrics.get(key), sums[key]):
                        found.append(
                            f"{where}: {key} is {result.metrics.get(key)!r} but its per-sample "
                            f"sums give {sums[key]!r}"
                        )
                found += _per_dataset(scorer, result, profile, where)
    produced = {m.key for m in definition.metrics if m.task}
    if produced - checked:
        found.append(f"metrics no archetype produced: {sorted(produced - checked)}")
    return found


def _per_dataset(scorer: Any, result: TaskResult, profile: Profile, where: str) -> list[str]:
    """Each dataset's values are the sums' ratios over its samples too; a dataset with no
    sample value shows none."""
    found = []
    for dataset, shown in result.per_dataset.items():
        mine = [r for r in result.samples if r.dataset == dataset]
        sums = scorer.compute(mine, profile)
        for key in scorer.metric_keys:
            if key not in shown:
                continue
            if shown[key] is None:
                if any(r.values and r.values.get(key) is not None for r in mine):
                    found.append(f"{where}, {dataset}: {key} shown empty though samples have one")
            elif not _same(shown[key], sums[key]):
                found.append(f"{where}, {dataset}: {key} is {shown[key]!r}, sums {sums[key]!r}")
    return found


def _perfect(definition: Benchmark, gt: Any, matched: dict[str, MatchedSubmission]) -> list[str]:
    if "perfect" not in matched:
        return []
    best: dict[str, bool] = {}
    for profile in definition.profiles:
        report = evaluate(definition, matched["perfect"], gt, profile.name)
        for metric in definition.metrics:
            value = report.metrics.get(metric.key)
            if value is not None and not metric.judged:
                at_best = (metric.normalised(value) or 0.0) >= 1 - 1e-9
                best[metric.key] = best.get(metric.key, False) or at_best
    short = sorted(k for k, ok in best.items() if not ok)
    if short:
        return [f"the perfect archetype misses the best value of {short} under every profile"]
    return []


# --- clusters and rewards -------------------------------------------------------------------


def _clusters(definition: Benchmark, gt: Any) -> list[str]:
    cluster_of = definition.uncertainty.cluster_of
    bad = [
        s.sample_id for s in gt.samples if not isinstance(cluster_of(s), str) or not cluster_of(s)
    ]
    return [f"cluster_of names no cluster for {len(bad)} items, e.g. {bad[0]!r}"] if bad else []


def _rewards(definition: Benchmark, gt: Any, matched: dict[str, MatchedSubmission]) -> list[str]:
    if definition.rewards is None:
        return []
    spec = definition.rewards()
    found = []
    profile = definition.profile(spec.profile)
    for item in gt.samples[:50]:
        # a training row names its item, not the item's place in a test set: index may differ
        back, _ = spec.decode_item(spec.encode_item(item, {}))
        if _fields(back) != _fields(item):
            found.append(f"the reward row codec does not give item {item.sample_id!r} back whole")
            break
    for item in gt.samples[:50]:
        try:
            prompt = spec.prompt(item)
        except Exception as exc:  # the author's to fix: say which item and what
            found.append(f"the reward prompt of item {item.sample_id!r} fails: {exc!r}")
            break
        if not isinstance(prompt, dict) or not isinstance(prompt.get("question"), str):
            found.append(f"the reward prompt of item {item.sample_id!r} has no 'question' text")
            break
    scorers = definition.scorers()
    for task, reward in spec.tasks.items():
        if not reward.mean_of or reward.score is None or task not in scorers:
            continue
        for archetype, some in matched.items():  # every archetype: they agree on a perfect file
            items, texts = _inputs(task, gt, some)
            if not items:
                continue
            ctx = Context(
                embedder_factory=definition.embedder,
                options={**some.options, **spec.batch_options(items, [{} for _ in items])},
            )
            results = scorers[task].score_all(items, texts, profile, ctx)
            mean = sum(reward.score(r) for r in results) / len(results)
            sums = scorers[task].compute(results, profile)
            expected = [sums[k] for k in reward.mean_of]
            if any(v is None for v in expected) or not _same(mean, sum(expected) / len(expected)):  # type: ignore[arg-type]
                found.append(
                    f"{task}, {archetype} archetype: the mean raw reward {mean!r} is not "
                    f"{reward.mean_of} ({expected})"
                )
                break
    return found


def _fields(item: Any) -> dict[str, Any]:
    """An item's fields but its ``index`` (its place in one test set, which a row need not
    keep): a msgspec struct's, a dataclass's, or the object's attributes."""
    names = getattr(item, "__struct_fields__", None)
    if names is None and dataclasses.is_dataclass(item):
        names = [f.name for f in dataclasses.fields(item)]
    fields = {n: getattr(item, n) for n in names} if names is not None else dict(vars(item))
    fields.pop("index", None)
    return fields
