"""Intervals that keep their promise when the evidence is thin: coverage with 8 and with 40
clusters, a replicate with a dataset drawn but nothing countable follows the task's own rule,
and an all-alike metric from a few items is never a single point."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from medvidbench import benchmarks
from medvidbench.core.intervals import FEW_CLUSTERS, metric_interval, minimum_detectable
from medvidbench.core.scoring import SampleResult
from medvidbench.core.statistics import Design, bootstrap, sample_means

MEDVIDBENCH = benchmarks.get("medvidbench")


def _coverage(n_clusters: int, sims: int, seed: int) -> float:
    """Share of simulated test sets (clusters of 1-5 alike items, a known truth) whose 95 %
    interval of the mean covers the truth."""
    rng = np.random.default_rng(seed)
    truth = float(np.mean(np.clip(0.6 + rng.normal(0, 0.2, size=2_000_000), 0.0, 1.0)))
    covered = 0
    for _ in range(sims):
        sizes = rng.integers(1, 6, size=n_clusters)
        effects = np.clip(0.6 + rng.normal(0, 0.2, size=n_clusters), 0.0, 1.0)
        outcomes = rng.random(int(sizes.sum())) < np.repeat(effects, sizes)
        rows = [SampleResult(i, "d", True, {"m": float(y)}) for i, y in enumerate(outcomes)]
        clusters = [f"c{c:03d}" for c in np.repeat(np.arange(n_clusters), sizes)]
        design = Design.build([sample_means(rows, ("m",))], clusters)
        got = bootstrap(
            design, ["m"], "test", 400, int(rng.integers(1 << 30)), bounds={"m": (0.0, 1.0)}
        )
        lo, hi = got.intervals["m"] or (np.nan, np.nan)
        covered += lo <= truth <= hi
    return covered / sims


@pytest.mark.parametrize("clusters", [8, 40])
def test_coverage_with_few_and_with_many_clusters(clusters: int) -> None:
    """Nominal 95 %: within 92.5-97.5 % on 800 simulated test sets (a binomial standard error
    of 0.8 points). Percentile intervals alone gave about 89 % with 8 clusters."""
    coverage = _coverage(clusters, 800, 26 + clusters)
    assert 0.925 <= coverage <= 0.975, coverage


def _sa(values: list[dict[str, float] | None], datasets: list[str]) -> list[SampleResult]:
    return [
        SampleResult(i, d, v is not None, v)
        for i, (v, d) in enumerate(zip(values, datasets, strict=True))
    ]


@pytest.mark.parametrize(
    ("task", "key", "profile", "values", "datasets"),
    [
        # SA: three items, one unreadable; a resample of only the unreadable one scores 0
        (
            "skill_assessment",
            "sa_acc",
            "leaderboard-v1",
            [{"aspect:a": 1.0, "level": 1.0}, {"aspect:a": 1.0, "level": 1.0}, None],
            ["x", "x", "x"],
        ),
        (
            "skill_assessment",
            "sa_acc",
            "leaderboard-v1",
            [{"aspect:a": 1.0, "level": 1.0}, None, {"aspect:b": 0.0, "level": 0.0}, None],
            ["x", "x", "y", "y"],
        ),
        # SA: a dataset whose items count different aspects; a resample may draw one aspect
        # only (the dataset's balanced accuracy is then that aspect's) or none (0)
        (
            "skill_assessment",
            "sa_acc",
            "leaderboard-v1",
            [
                {"aspect:a": 1.0, "level": 1.0},
                {"aspect:b": 0.0, "level": 0.0},
                None,
                {"aspect:c": 1.0, "level": 1.0},
            ],
            ["x", "x", "x", "y"],
        ),
        # v1 DVC_F1: a dataset drawn with nothing evaluated enters as 0 with its share
        (
            "dense_captioning",
            "dvc_f1",
            "leaderboard-v1",
            [{"dvc_f1": 0.8}, None, {"dvc_f1": 0.4}, {"dvc_f1": 0.6}],
            ["x", "x", "y", "y"],
        ),
    ],
)
def test_a_replicate_with_nothing_countable_follows_the_tasks_rule(
    task: str,
    key: str,
    profile: str,
    values: list[dict[str, float] | None],
    datasets: list[str],
) -> None:
    """Every possible resample of the items (one per cluster) against the task's own
    aggregation run on the resampled items: equal, none dropped as undefined."""
    scorer = MEDVIDBENCH.scorers()[task]
    rules = MEDVIDBENCH.profile(profile)
    results = _sa(values, datasets)
    design = Design.build(
        [scorer.linearise(results, rules)], [f"c{i}" for i in range(len(results))]
    )
    n = len(results)
    counts = np.array(
        [
            np.bincount(np.array(draw), minlength=n)
            for draw in itertools.product(range(n), repeat=n)
        ],
        dtype=float,
    )
    fast = design.replicates(counts, [key])[:, 0]
    for r, row in enumerate(counts):
        copies = [s for s in results for _ in range(int(row[s.index]))]
        slow = scorer.aggregate(copies, rules).metrics[key]  # type: ignore[arg-type]
        assert slow is not None
        assert fast[r] == pytest.approx(slow, abs=1e-12), (row, fast[r], slow)


def test_three_items_all_right_are_not_a_point_and_say_so() -> None:
    rows = [SampleResult(i, "d", True, {"m": 1.0}) for i in range(3)]
    design = Design.build([sample_means(rows, ("m",))], ["a", "b", "c"])
    got = bootstrap(design, ["m"], "test", 200, 0, bounds={"m": (0.0, 1.0)})
    lo, hi = got.intervals["m"] or (1.0, 1.0)
    assert hi == 1.0 and 0.3 < lo < 0.6  # Wilson with 3 trials: 0.44
    assert got.metric_clusters == {"m": 3} and got.widened == ["m"]
    stamped = got.to_dict()
    assert stamped["metric_clusters"] == {"m": 3} and stamped["widened"] == ["m"]
    assert "30 clusters" in stamped["method"]


def test_many_clusters_keep_the_percentile_interval() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(0.5, 0.02, size=1000)
    plain, widened = metric_interval(values, 0.5, FEW_CLUSTERS, (0.0, 1.0))
    assert widened is False
    assert plain == pytest.approx(tuple(np.percentile(values, [2.5, 97.5])))
    wide, widened = metric_interval(values, 0.5, 5, (0.0, 1.0))
    assert widened is True and wide is not None and wide[1] - wide[0] > plain[1] - plain[0]  # type: ignore[index]


def test_minimum_detectable_difference_is_2_8_standard_deviations() -> None:
    d = np.random.default_rng(0).normal(0.0, 0.01, size=20_000)
    assert minimum_detectable(d) == pytest.approx(0.028, rel=0.02)
    assert minimum_detectable(np.array([np.nan, 0.1])) is None


def test_a_value_off_its_declared_scale_keeps_a_proper_interval() -> None:
    values = np.random.default_rng(1).normal(50.0, 1.0, size=500)
    got, _ = metric_interval(values, 50.0, 100, (0.0, 1.0))
    assert got is not None and got[0] < 50.0 < got[1]


def test_two_equal_models_on_eight_clusters_are_rarely_called_different() -> None:
    """Paired differences get the metric intervals' few-cluster correction: uncorrected, two
    equally good models on 8 clusters were 'distinguishable' in about 9-12 % of test sets."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    from bench_intervals import _paired_sets  # the simulation the bench script prints

    plain, corrected, _ = _paired_sets(8, 600, 300, 2026, 0.0)
    assert corrected <= 0.065, corrected
    assert plain > corrected  # the correction is what brings it down


def test_the_detectable_difference_uses_t_quantiles_below_thirty_clusters() -> None:
    d = np.random.default_rng(1).normal(0, 0.1, 400)
    many, few = minimum_detectable(d), minimum_detectable(d, clusters=8)
    assert many is not None and few is not None
    assert few > many * 1.2  # t(7) quantiles and CR1's factor: a larger difference is needed
    assert minimum_detectable(d, clusters=FEW_CLUSTERS) == many
