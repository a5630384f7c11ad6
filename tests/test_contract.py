"""The plug-in kernel's contract, checked on every benchmark the registry finds (no list of
them here: a new one is checked by being installed) with the conformance kit,
:mod:`medvidbench.testing`; and the kit itself, on benchmarks broken on purpose. Profiles name a
variant of every declared rule.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from medvidbench import benchmarks
from medvidbench.benchmarks.mcqa_demo.scoring import ChoiceScorer
from medvidbench.core.benchmark import Benchmark, Profile, Rule
from medvidbench.core.scoring import TaskResult
from medvidbench.testing import assert_conforms

INSTALLED = benchmarks.slugs()


@pytest.mark.parametrize("slug", INSTALLED)
def test_every_installed_benchmark_conforms(slug: str, tmp_path: Path) -> None:
    """The conformance kit (medvidbench.testing) on every benchmark the registry finds: each
    metric defined once (headline and per dataset from the per-sample sums, every profile and
    archetype), the kernel's coverage rules, the perfect archetype, clusters, rewards."""
    assert_conforms(benchmarks.get(slug), tmp_path)


def _broken_mcqa(**changes: Any) -> Benchmark:
    return dataclasses.replace(benchmarks.get("mcqa-demo"), **changes)


class _Inflated(ChoiceScorer):
    """A scorer whose headline is not what its per-sample sums give."""

    def aggregate(self, results: list[Any], profile: Profile) -> TaskResult:
        out = super().aggregate(results, profile)
        return dataclasses.replace(
            out, metrics={k: (v or 0) + 0.01 for k, v in out.metrics.items()}
        )


class _Blind(ChoiceScorer):
    """A scorer that reads no answer: even the perfect archetype scores 0."""

    def parse(self, text: str, item: Any, profile: Profile) -> Any:
        return super().parse("", item, profile)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"scorers": lambda: {"mcqa": _Inflated()}}, "but its per-sample sums give"),
        ({"scorers": lambda: {"mcqa": _Blind()}}, "perfect archetype misses the best value"),
        ({"scorers": lambda: {}}, "tasks with no scorer: mcqa"),
        ({"demo": None}, "no demo data"),
        ({"slug": "Not A Slug"}, "is not lowercase letters"),
    ],
    ids=["inflated-headline", "blind-parser", "no-scorer", "no-demo", "bad-slug"],
)
def test_the_kit_reports_a_broken_benchmark(
    changes: dict[str, Any], expected: str, tmp_path: Path
) -> None:
    with pytest.raises(AssertionError, match=expected):
        assert_conforms(_broken_mcqa(**changes), tmp_path)


@pytest.mark.parametrize("slug", [s for s in INSTALLED if len(benchmarks.get(s).profiles) > 1])
def test_every_profile_names_a_declared_variant_of_every_rule(slug: str) -> None:
    """Benchmarks of several profiles: each profile is a distinct pick of named variants (a
    one-profile benchmark such as MCQA-Demo reports named variants side by side instead)."""
    bench = benchmarks.get(slug)
    assert bench.rules, f"{slug} declares no named rule"
    for profile in bench.profiles:
        for rule in bench.rules:
            assert profile.variant(rule.name) in rule.variants
    picks = {tuple(p.variant(r.name) for r in bench.rules) for p in bench.profiles}
    assert len(picks) == len(bench.profiles)


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


def _broken_rewards(**changes: Any) -> Benchmark:
    """MedSG-Bench (it offers rewards) with its reward spec changed."""
    base = benchmarks.get("medsg")
    assert base.rewards is not None
    spec = base.rewards()
    return dataclasses.replace(base, rewards=lambda: dataclasses.replace(spec, **changes))


def _lossy(data: Any) -> Any:
    item, extras = benchmarks.get("medsg").rewards().decode_item(data)  # type: ignore[misc]
    return dataclasses.replace(item, answer=(0.0, 0.0, 1.0, 1.0)), extras


def _doubled(task: str) -> Any:
    """A raw reward of twice the IoU (capped at 1), claimed to average to the task's mIoU: true
    on the perfect archetype (1 = 1), false on every other."""
    key = f"{task}.miou"
    return lambda r: min(1.0, 2 * float((r.values or {}).get(key, 0.0)))


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"decode_item": _lossy}, "the reward row codec does not give item .* back whole"),
        ({"prompt": lambda item: {"media": {}}}, "reward prompt of item .* has no 'question'"),
        (
            {"prompt": lambda item: {"question": item.missing, "media": {}}},
            "reward prompt of item .* fails: AttributeError",
        ),
        ("doubled", r"archetype: the mean raw reward .* is not \('concept.miou',\)"),
    ],
    ids=["lossy-codec", "no-question", "failing-prompt", "mean-of-on-another-archetype"],
)
def test_the_kit_reports_broken_rewards(changes: Any, expected: str, tmp_path: Path) -> None:
    if changes == "doubled":
        spec = benchmarks.get("medsg").rewards()  # type: ignore[misc]
        reward = dataclasses.replace(spec.tasks["concept"], score=_doubled("concept"))
        changes = {"tasks": {**spec.tasks, "concept": reward}}
    with pytest.raises(AssertionError, match=expected):
        assert_conforms(_broken_rewards(**changes), tmp_path)
