"""The consensus across benchmarks (core/consensus.py): the aggregations' defining properties,
Plackett-Luce on per-item orders, rank intervals, and ``medvidbench rank`` end to end."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark, Metric, Task
from medvidbench.core.consensus import Result, aggregate, kemeny
from medvidbench.core.evidence import SCORED, Evidence, MetricEvidence


def toy(slug: str, tasks: int, scale: str = "0-1") -> Benchmark:
    """A benchmark of ``tasks`` one-metric tasks (the kernel fields the consensus reads)."""
    base = benchmarks.get("mcqa-demo")
    return dataclasses.replace(
        base,
        slug=slug,
        tasks=tuple(
            Task(f"t{i}", f"T{i}", f"task {i}", family="multiple-choice") for i in range(tasks)
        ),
        metrics=tuple(Metric(f"m{i}", f"M{i}", f"t{i}", "x", scale) for i in range(tasks)),  # type: ignore[arg-type]
        scorers=lambda: {},
    )


def orders(found: list[Any]) -> dict[str, list[str]]:
    return {a.method: [s.model for s in a.standings] for a in found}


def test_the_published_counterexample_mean_and_consensus_disagree() -> None:
    """Colombo et al.'s point (their README: the mean gives A > B > C, their consensus C > B > A):
    one system excelling on one task wins the mean, though the others beat it on most tasks."""
    bench = toy("toy", 3)
    scores = {"A": [1.0, 0.3, 0.3], "B": [0.5, 0.4, 0.4], "C": [0.1, 0.5, 0.5]}
    results = [Result(m, bench, {f"m{i}": v for i, v in enumerate(s)}) for m, s in scores.items()]
    found = orders(aggregate(results, ("mean", "borda", "kemeny")))
    assert found["mean"] == ["A", "B", "C"]
    assert found["borda"] == found["kemeny"] == ["C", "B", "A"]


def test_leaving_out_a_weak_task_never_lifts_a_model() -> None:
    """P is A's file without A's weakest task. Skipping the missing metric put P first by mean
    and Borda; it takes that metric's worst place, as the benchmark's own board ranks a missing
    value last, so P never passes A (and a model absent from a whole benchmark still is not
    last: test_a_model_missing_from_a_benchmark_is_missing_not_last)."""
    bench = toy("toy", 3)
    scores = {"A": [0.9, 0.8, 0.1], "P": [0.9, 0.8, None], "B": [0.5, 0.5, 0.5]}
    results = [Result(m, bench, {f"m{i}": v for i, v in enumerate(s)}) for m, s in scores.items()]
    for agg in aggregate(results, ("mean", "borda", "kemeny"), replicates=0):
        rank = {s.model: s.rank for s in agg.standings}
        assert rank["A"] < rank["P"], (agg.method, rank)
    mean = {s.model: s.score for s in aggregate(results, ("mean",), replicates=0)[0].standings}
    assert mean["P"] == pytest.approx((0.9 + 0.8 + 0.0) / 3)  # the missing metric counts 0


def test_identical_models_share_their_rank_under_every_order_method() -> None:
    """Two identical files: each benchmark ties them, so Kemeny's order between them is only a
    tie-break; they share a rank (and a score), as under mean and Borda, in every replicate too."""
    res = []
    for bench in (toy("b1", 2), toy("b2", 2)):
        for model, v in (("X", [0.7, 0.6]), ("Y", [0.7, 0.6]), ("Z", [0.2, 0.3])):
            res.append(Result(model, bench, {"m0": v[0], "m1": v[1]}))
    for agg in aggregate(res, ("mean", "borda", "kemeny"), replicates=0):
        got = {s.model: (s.rank, s.score) for s in agg.standings}
        assert got["X"] == got["Y"] and got["X"][0] == 1 and got["Z"][0] == 3, (agg.method, got)


def test_a_family_no_benchmark_has_is_refused_with_the_families_there() -> None:
    """A misspelt --family used to print empty tables and exit 0."""
    bench = toy("toy", 2)
    results = [Result(m, bench, {"m0": v, "m1": v}) for m, v in (("A", 0.2), ("B", 0.4))]
    assert orders(aggregate(results, ("mean",), family="multiple-choice"))["mean"] == ["B", "A"]
    for family in ("multiple-choise", "captioning"):
        with pytest.raises(ValueError, match=f"no task of family '{family}'.*: multiple-choice$"):
            aggregate(results, ("mean",), family=family)


def test_the_worked_example_of_the_statistics_page() -> None:
    """docs/statistics.md, "When they disagree": three benchmarks of one metric each, and the
    same with benchmark 1's metric read on another scale (times 0.1)."""
    scores = {"A": [1.0, 0.3, 0.3], "B": [0.5, 0.4, 0.4], "C": [0.1, 0.5, 0.5]}
    benches = [toy(f"b{i + 1}", 1) for i in range(3)]

    def run(factor: float) -> dict[str, list[tuple[str, float]]]:
        results = [
            Result(m, benches[i], {"m0": v[i] * (factor if i == 0 else 1.0)})
            for m, v in scores.items()
            for i in range(3)
        ]
        return {
            a.method: [(s.model, round(s.score or 0.0, 3)) for s in a.standings]
            for a in aggregate(results, ("mean", "borda", "kemeny"), replicates=0)
        }

    plain, scaled = run(1.0), run(0.1)
    assert plain["mean"] == [("A", 0.533), ("B", 0.433), ("C", 0.367)]
    assert plain["borda"] == [("C", 0.667), ("B", 0.5), ("A", 0.333)]
    assert [m for m, _ in plain["kemeny"]] == ["C", "B", "A"]
    assert scaled["mean"] == [("C", 0.337), ("B", 0.283), ("A", 0.233)]
    assert scaled["borda"] == plain["borda"] and scaled["kemeny"] == plain["kemeny"]


def _evidence(bench: Benchmark, values: dict[str, np.ndarray]) -> Evidence:
    n = len(next(iter(values.values())))
    ev = Evidence(
        bench.slug,
        "sha",
        "p",
        "",
        [f"q{i}" for i in range(n)],
        ["t0"] * n,
        [f"c{i // 3}" for i in range(n)],
    )
    for key, v in values.items():
        ev.metrics[key] = MetricEvidence("t0", v.astype(np.float32), np.full(n, SCORED, np.uint8))
    return ev


def test_a_metric_on_another_scale_moves_the_mean_but_no_order() -> None:
    """Multiplying one benchmark's metric by a constant (a percent read as a fraction) changes
    the mean's order; Borda, Kemeny and Plackett-Luce, which see only orders, stay put."""
    rng = np.random.default_rng(0)
    one, two = toy("one", 1), toy("two", 1)
    items = {m: rng.random(60) < p for m, p in (("X", 0.8), ("Y", 0.6), ("Z", 0.4))}
    second = {"X": 0.2, "Y": 0.5, "Z": 0.9}

    def results(factor: float) -> list[Result]:
        out = []
        for model, hits in items.items():
            out.append(
                Result(model, one, {"m0": float(hits.mean())}, None, _evidence(one, {"m0": hits}))
            )
            col = np.full(60, second[model] * factor)
            col[: int(second[model] * 60)] += 1e-3  # a per-item order that agrees with the value
            out.append(
                Result(
                    model, two, {"m0": second[model] * factor}, None, _evidence(two, {"m0": col})
                )
            )
        return out

    plain, scaled = (
        orders(aggregate(results(1.0), replicates=0)),
        orders(aggregate(results(0.1), replicates=0)),
    )
    assert plain["mean"] != scaled["mean"]
    for method in ("borda", "kemeny", "plackett-luce"):
        assert plain[method] == scaled[method], method


def test_a_model_missing_from_a_benchmark_is_missing_not_last() -> None:
    a, b = toy("a", 1), toy("b", 1)
    results = [
        Result("Only-A", a, {"m0": 0.9}),
        Result("Both", a, {"m0": 0.5}),
        Result("Both", b, {"m0": 0.2}),
        Result("Other", b, {"m0": 0.1}),
    ]
    found = {x.method: x for x in aggregate(results, ("mean", "borda", "kemeny"))}
    for method in ("borda", "kemeny"):
        first = found[method].standings[0]
        assert first.model == "Only-A" and first.benchmarks == 1, method  # not punished for b
    assert [s.model for s in found["mean"].standings][-1] == "Other"


def test_kemeny_exact_and_local_agree_with_a_brute_force_on_small_boards() -> None:
    import itertools

    rng = np.random.default_rng(3)
    for _ in range(20):
        models = [f"M{i}" for i in range(6)]
        votes = {
            f"v{k}": {m: float(rng.random()) for m in models if rng.random() > 0.2}
            for k in range(5)
        }
        found = kemeny(votes)
        placed = sorted(found, key=lambda m: -found[m])

        def cost(order: tuple[str, ...], votes: dict[str, dict[str, float]] = votes) -> float:
            total = 0.0
            for vote in votes.values():
                for i, j in itertools.combinations(range(len(order)), 2):
                    x, y = vote.get(order[i]), vote.get(order[j])
                    if x is not None and y is not None:
                        total += 1.0 if y > x else 0.5 if x == y else 0.0
            return total

        best = min(cost(p) for p in itertools.permutations(models))
        assert cost(tuple(placed)) == pytest.approx(best)


def test_plackett_luce_recovers_known_strengths() -> None:
    """Simulated per-item results of models of known, increasing skill: the fit orders them
    as they are made, from items pooled over two benchmarks with 90 % of results masked."""
    rng = np.random.default_rng(7)
    one, two = toy("one", 1), toy("two", 1)
    skills = {f"M{i}": 0.2 + 0.07 * i for i in range(8)}
    results = []
    for bench in (one, two):
        for model, p in skills.items():
            hits = (rng.random(3000) < p).astype(float)
            hits[rng.random(3000) < 0.9] = np.nan  # not measured
            ev = _evidence(bench, {"m0": hits})
            ev.metrics["m0"].status[np.isnan(hits)] = 3
            results.append(Result(model, bench, {"m0": float(np.nanmean(hits))}, None, ev))
    pl = next(a for a in aggregate(results, ("plackett-luce",), replicates=0))
    found = [s.model for s in pl.standings]
    truth = sorted(skills, key=lambda m: -skills[m])
    assert _kendall(found, truth) >= 0.9


def test_an_evaluation_of_a_reissued_test_set_is_matched_by_item_key() -> None:
    """One model's evidence from a re-issued test set (items reordered, one dropped, one new)
    counts exactly as the same values on the first set's items would, missing where it lacks
    an item."""
    rng = np.random.default_rng(3)
    bench = toy("one", 1)
    hits = {m: (rng.random(30) < p).astype(float) for m, p in (("A", 0.8), ("B", 0.5), ("C", 0.3))}

    def run(reissued: bool) -> list[Any]:
        results = []
        for model, v in hits.items():
            ev = _evidence(bench, {"m0": v})
            if model == "C" and reissued:
                order = [*rng.permutation(29), 30]  # q29 dropped, q30 new
                keys = [f"q{i}" for i in order]
                values = np.array([v[i] if i < 30 else 1.0 for i in order])
                ev = _evidence(bench, {"m0": values})
                ev.keys = keys
            elif model == "C":
                v = v.copy()
                v[29] = np.nan
                ev = _evidence(bench, {"m0": v})
                ev.metrics["m0"].status[29] = 3
            results.append(Result(model, bench, {"m0": float(np.nanmean(v))}, None, ev))
        return aggregate(results, ("plackett-luce",), replicates=20)[0].standings

    matched, expected = run(True), run(False)
    assert [(s.model, round(s.score or 0, 9)) for s in matched] == [
        (s.model, round(s.score or 0, 9)) for s in expected
    ]


def _kendall(a: list[str], b: list[str]) -> float:
    pos = {m: i for i, m in enumerate(b)}
    concordant = discordant = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            if pos[a[i]] < pos[a[j]]:
                concordant += 1
            else:
                discordant += 1
    return (concordant - discordant) / (concordant + discordant)


def test_rank_intervals_cover_the_true_rank() -> None:
    """A small coverage simulation: models whose true per-item skills are known, resampled
    test sets of clustered items; the 95 % rank interval of Plackett-Luce holds the true rank
    in most test sets (the full simulation is bench/bench_consensus.py)."""
    rng = np.random.default_rng(11)
    skills = {"M0": 0.45, "M1": 0.5, "M2": 0.55, "M3": 0.7}
    truth = {m: r + 1 for r, m in enumerate(sorted(skills, key=lambda m: -skills[m]))}
    held, trials = 0, 0
    for trial in range(12):
        bench = toy("one", 1)
        cluster_effect = rng.normal(0, 0.4, 100).repeat(3)
        results = []
        for model, p in skills.items():
            logit = np.log(p / (1 - p)) + cluster_effect
            hits = (rng.random(300) < 1 / (1 + np.exp(-logit))).astype(float)
            ev = _evidence(bench, {"m0": hits})
            results.append(Result(model, bench, {"m0": float(hits.mean())}, None, ev))
        pl = aggregate(results, ("plackett-luce",), replicates=100, seed=trial)[0]
        for s in pl.standings:
            assert s.interval is not None
            trials += 1
            held += s.interval[0] <= truth[s.model] <= s.interval[1]
    assert held / trials >= 0.85


def test_rank_prints_every_aggregation_from_reports(tmp_path: Path) -> None:
    """Three reports of one model family from three benchmarks, and one more model."""
    files = {}
    for slug in ("medvidbench", "medsg", "mcqa-demo"):
        bench = benchmarks.get(slug)
        assert bench.demo is not None
        files[slug] = bench.demo.synthesise(tmp_path / slug, 200, 2)
    reports = []
    for slug, demo in files.items():
        for archetype in ("perfect", "strong"):
            out = tmp_path / f"{slug}-{archetype}.json"
            done = _cli(
                "evaluate",
                str(demo[archetype]),
                "--ground-truth",
                str(demo["ground_truth"]),
                "--benchmark",
                slug,
                "--per-item",
                "--model-name",
                f"Family {archetype}",
                "--out",
                str(out),
                "--json",
            )
            assert done.returncode == 0, done.stderr
            reports.append(str(out))
    shown = _cli("rank", *reports)
    assert shown.returncode == 0, shown.stderr
    for method in ("mean", "borda", "kemeny", "plackett-luce"):
        assert f"{method}:" in shown.stdout
    rows = json.loads(_cli("rank", *reports, "--json").stdout)
    assert {r["method"] for r in rows} == {"mean", "borda", "kemeny", "plackett-luce"}
    for method in ("mean", "borda", "kemeny", "plackett-luce"):
        mine = [r for r in rows if r["method"] == method]
        assert [r["model"] for r in mine] == ["Family perfect", "Family strong"], method
        assert all(r["interval"] and r["benchmarks"] == 3 for r in mine), method
    nameless = json.loads(Path(reports[0]).read_text())
    nameless["model"] = ""
    (tmp_path / "nameless.json").write_text(json.dumps(nameless))
    refused = _cli("rank", str(tmp_path / "nameless.json"))
    assert refused.returncode == 2 and "--model-name" in refused.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "medvidbench", *args], capture_output=True, text=True, timeout=300
    )
