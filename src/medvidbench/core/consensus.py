"""Which model is best across benchmarks: three aggregations, side by side, with rank intervals.

Entries are models, each with an evaluation on some of the benchmarks (:class:`Result`). A model
missing from a benchmark is missing there, never last: every aggregation uses only what was
measured. A model measured on a benchmark but without one of its metrics (a task left out, a
judgement pending or failed) takes that metric's worst place there, as the benchmark's own board
ranks a missing value last, so that leaving out a weak task never lifts a model (the mean
counts it as 0). The methods (docs/statistics.md gives the formulas, assumptions and when they
disagree):

- ``mean``: each benchmark's ranked metrics on 0-1 with 1 the best (``Metric.normalised``),
  averaged within the benchmark, then across the benchmarks the model has. What users expect,
  shown for that; it depends on each metric's scale (a metric measured on another scale moves
  it), which is its known failure.
- ``borda`` and ``kemeny``: orders, not scores (Colombo et al. 2022, "What are the best
  systems?"). Within a benchmark, each ranked metric orders the models (ties share the mean
  rank), and a Borda count over those metric orders gives the benchmark's order; across
  benchmarks, ``borda`` counts again, ``kemeny`` finds the order with the fewest disagreements
  with the benchmarks' orders (exact up to :data:`KEMENY_EXACT` models, a local search from the
  Borda order beyond). Each benchmark's points are normalised to 0-1 over the models it
  measured, so a model absent from one is not ranked there.
- ``plackett-luce``: per-item orders pooled across benchmarks (ONEBench, Ghosh et al. 2025).
  On each item, and each metric of it, every model that scored strictly better than others is
  a choice among itself and those others (a top-1 observation; equal values say nothing);
  a Plackett-Luce model is fitted to all of them by iterative Luce spectral ranking with a
  small prior (:mod:`medvidbench.core.luce`). It needs per-item evidence
  (:mod:`medvidbench.core.evidence`).

Rank intervals come from bootstrap replicates that keep every benchmark's own clusters: the
metric replicates each evaluation stores (drawn with one seed per test set, so paired across
models) for the first three, cluster resamples of the per-item evidence for Plackett-Luce.
Each model's interval is the 2.5th to 97.5th percentile of its rank over the replicates:
marginal, not simultaneous.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from medvidbench.core.benchmark import Benchmark, Metric
from medvidbench.core.evidence import Evidence
from medvidbench.core.luce import choices, measured, plackett_luce, resample

METHODS = ("mean", "borda", "kemeny", "plackett-luce")
ABOUT = {
    "mean": "the mean over benchmarks of each benchmark's mean normalised metric (0-1, 1 best)",
    "borda": "Borda over benchmarks of each benchmark's Borda over its metric orders",
    "kemeny": "the order closest to the benchmarks' orders (fewest pairs in disagreement)",
    "plackett-luce": "a Plackett-Luce fit to the per-item orders of every benchmark, pooled",
}
KEMENY_EXACT = 8
REPLICATES = 200


@dataclass(slots=True)
class Result:
    """One model's evaluation on one benchmark: its metrics, its stored bootstrap replicates
    (``keys``, ``replicates x keys``; None: none kept) and its per-item evidence (None: none
    kept)."""

    model: str
    benchmark: Benchmark
    metrics: Mapping[str, float | None]
    replicates: tuple[list[str], np.ndarray] | None = None
    evidence: Evidence | None = None


@dataclass(slots=True)
class Standing:
    """A model's place under one aggregation."""

    model: str
    rank: int
    score: float | None
    interval: tuple[int, int] | None
    benchmarks: int


@dataclass(slots=True)
class Aggregation:
    """One method's standings (best first), what it used, and why it has no intervals."""

    method: str
    about: str
    standings: list[Standing]
    replicates: int = 0
    note: str = ""
    benchmarks: list[str] = field(default_factory=list)


# --- the point estimates --------------------------------------------------------------------


def families(benches: Iterable[Benchmark]) -> list[str]:
    """The capability families the benchmarks' tasks name (sorted; a task of none is left out)."""
    return sorted({t.family for b in benches for t in b.tasks if t.family})


def _ranked(bench: Benchmark, family: str | None) -> list[Metric]:
    """The benchmark's ranked metrics (of ``family``'s tasks, when given). A metric of no one
    task (MedSG-Bench's overall accuracy) belongs to a family when all the benchmark's tasks
    do."""
    tasks = {t.name: t.family for t in bench.tasks}
    whole = set(tasks.values()) == {family}
    return [
        m
        for m in bench.metrics
        if m.ranked and (family is None or (tasks.get(m.task) == family if m.task else whole))
    ]


def _mean_ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks (1 the largest), ties sharing their mean rank."""
    v = np.asarray(values, dtype=float)
    order = np.argsort(-v, kind="stable")
    ranks = np.empty(len(v))
    ranks[order] = np.arange(1, len(v) + 1)
    for value in np.unique(v):
        tied = v == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def _points(scores: Mapping[str, float]) -> dict[str, float]:
    """Borda points on 0-1 (1 the best) among the models present; one model alone gets 1."""
    models = list(scores)
    if len(models) == 1:
        return {models[0]: 1.0}
    ranks = _mean_ranks([scores[m] for m in models])
    return {
        m: float((len(models) - r) / (len(models) - 1)) for m, r in zip(models, ranks, strict=True)
    }


def _oriented(metric: Metric, value: float) -> float:
    return value if metric.higher_is_better else -value


def _table(
    by_bench: Mapping[str, Sequence[Result]],
    values: Mapping[tuple[str, str], Mapping[str, float | None]],
    family: str | None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Per benchmark, per ranked metric, each model's value (``values[bench, model]`` holds the
    metric values used: the point estimates or one replicate's).

    A model measured on the benchmark (a value of one of the metrics taking part) but without a
    value of a metric that others have there (a task its file left out, a judgement pending or
    failed) takes that metric's worst place, as the benchmark's own board ranks a missing value
    last (``-inf``/``+inf`` in the metric's direction): leaving out a weak task never lifts a
    model. A model not measured on the benchmark at all is not in its table: missing there,
    never last. Which values are missing is decided on the point estimates, so a replicate
    whose value is undefined for a model with a point value leaves the model out of it.
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    for slug, results in by_bench.items():
        bench = results[0].benchmark
        table: dict[str, dict[str, float]] = {}
        ranked = _ranked(bench, family)
        for metric in ranked:
            present = {}
            for r in results:
                value = values[slug, r.model].get(metric.key)
                if value is not None and np.isfinite(value):
                    present[r.model] = float(value)
            if present:
                table[metric.key] = present
        on_bench = {m for present in table.values() for m in present}
        for metric in ranked:
            present = table.get(metric.key, {})
            worst = -math.inf if metric.higher_is_better else math.inf
            for r in results:
                if present and r.model in on_bench and not _finite(r.metrics.get(metric.key)):
                    present[r.model] = worst
        out[slug] = table
    return out


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def mean_scores(
    table: Mapping[str, Mapping[str, Mapping[str, float]]], benches: Mapping[str, Benchmark]
) -> dict[str, float]:
    """Each model's mean over benchmarks of its mean normalised metric there."""
    per: dict[str, list[float]] = {}
    for slug, metrics in table.items():
        bench = benches[slug]
        mine: dict[str, list[float]] = {}
        for key, present in metrics.items():
            metric = bench.metrics_by_key[key]
            for model, value in present.items():
                # a missing value (worst place, see _table) counts as the scale's worst, 0
                unit = metric.normalised(value) if math.isfinite(value) else 0.0
                if unit is not None:
                    mine.setdefault(model, []).append(unit)
        for model, got in mine.items():
            per.setdefault(model, []).append(float(np.mean(got)))
    return {m: float(np.mean(v)) for m, v in per.items()}


def benchmark_orders(
    table: Mapping[str, Mapping[str, Mapping[str, float]]], benches: Mapping[str, Benchmark]
) -> dict[str, dict[str, float]]:
    """Each benchmark's Borda score per model (over its metric orders, 0-1, 1 the best)."""
    out: dict[str, dict[str, float]] = {}
    for slug, metrics in table.items():
        bench = benches[slug]
        gathered: dict[str, list[float]] = {}
        for key, present in metrics.items():
            metric = bench.metrics_by_key[key]
            oriented = {m: _oriented(metric, v) for m, v in present.items()}
            for model, p in _points(oriented).items():
                gathered.setdefault(model, []).append(p)
        out[slug] = {m: float(np.mean(v)) for m, v in gathered.items()}
    return out


def borda(orders: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Borda across benchmarks: each model's mean 0-1 points over the benchmarks it is in."""
    gathered: dict[str, list[float]] = {}
    for scores in orders.values():
        for model, p in _points(scores).items():
            gathered.setdefault(model, []).append(p)
    return {m: float(np.mean(v)) for m, v in gathered.items()}


def _disagreements(models: list[str], orders: Mapping[str, Mapping[str, float]]) -> np.ndarray:
    """cost[i, j]: the benchmarks whose order disagrees with placing i above j (a tie: 1/2)."""
    n = len(models)
    cost = np.zeros((n, n))
    for scores in orders.values():
        for i, j in itertools.permutations(range(n), 2):
            a, b = scores.get(models[i]), scores.get(models[j])
            if a is None or b is None:
                continue  # a model this benchmark did not measure: no opinion on the pair
            cost[i, j] += 1.0 if b > a else 0.5 if a == b else 0.0
    return cost


def kemeny(orders: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The Kemeny order (fewest pairwise disagreements with the benchmarks' orders), as scores
    (higher first): exact by dynamic programming over subsets up to :data:`KEMENY_EXACT`
    models, else a local search (moving one model at a time) from the Borda order.

    Next models of the order that the benchmarks compared and split evenly (swapping them costs
    nothing: two identical files, say) share a score, and so a rank: the order between them is
    only a tie-break, and the rank must not claim more.
    """
    models = sorted({m for scores in orders.values() for m in scores})
    if not models:
        return {}
    cost = _disagreements(models, orders)
    start = borda(orders)
    if len(models) <= KEMENY_EXACT:
        order = _exact(cost, [start[m] for m in models])
    else:
        order = _local(cost, sorted(range(len(models)), key=lambda i: -start[models[i]]))
    scores: dict[str, float] = {}
    for place, i in enumerate(order):
        score = float(len(order) - place)
        if place:
            j = order[place - 1]
            compared = cost[j, i] + cost[i, j] > 0  # by some benchmark
            if compared and abs(cost[j, i] - cost[i, j]) < 1e-12:
                score = scores[models[j]]
        scores[models[i]] = score
    return scores


def _exact(cost: np.ndarray, tie_break: Sequence[float]) -> list[int]:
    """The cheapest order, by DP over the set placed first (ties: the better Borda first)."""
    n = cost.shape[0]
    best: dict[int, tuple[float, list[int]]] = {0: (0.0, [])}
    for size in range(n):
        for placed in [s for s in best if bin(s).count("1") == size]:
            spent, order = best[placed]
            rest = [j for j in range(n) if not placed & (1 << j)]
            for i in sorted(rest, key=lambda i: -tie_break[i]):
                extra = sum(cost[i, j] for j in rest if j != i)
                key = placed | (1 << i)
                if key not in best or spent + extra < best[key][0] - 1e-12:
                    best[key] = (spent + extra, [*order, i])
    return best[(1 << n) - 1][1]


def _local(cost: np.ndarray, order: list[int]) -> list[int]:
    """Move single models while that lowers the disagreements."""

    def total(o: list[int]) -> float:
        return float(sum(cost[o[a], o[b]] for a in range(len(o)) for b in range(a + 1, len(o))))

    current, improved = total(order), True
    while improved:
        improved = False
        for a in range(len(order)):
            for b in range(len(order)):
                if a == b:
                    continue
                moved = order[:a] + order[a + 1 :]
                moved.insert(b, order[a])
                found = total(moved)
                if found < current - 1e-12:
                    order, current, improved = moved, found, True
    return order


# --- the whole ------------------------------------------------------------------------------


def aggregate(
    results: Sequence[Result],
    methods: Sequence[str] = METHODS,
    replicates: int = REPLICATES,
    seed: int = 0,
    family: str | None = None,
) -> list[Aggregation]:
    """Every method's standings of the models in ``results``, with rank intervals
    (``family``: only the tasks of that capability family).

    Raises:
        ValueError: an unknown method, a family none of the benchmarks has a task of, or a
            model evaluated twice on one benchmark.
    """
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown aggregation {unknown}; there are: {', '.join(METHODS)}")
    by_bench: dict[str, list[Result]] = {}
    for r in results:
        by_bench.setdefault(r.benchmark.slug, []).append(r)
    for slug, rs in by_bench.items():
        twice = sorted({r.model for r in rs if [x.model for x in rs].count(r.model) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} evaluated twice on {slug}: keep one evaluation")
    benches = {slug: rs[0].benchmark for slug, rs in by_bench.items()}
    present = families(benches.values())
    if family is not None and family not in present:
        raise ValueError(
            f"no task of family {family!r} in these reports' benchmarks; "
            f"their families: {', '.join(present) or 'none'}"
        )
    models = sorted({r.model for r in results})
    # on how many benchmarks each model was measured: a value of one of the ranked metrics
    # taken into account (of ``family``'s tasks, when given), not merely an evaluation there
    measured = _table(by_bench, {(r.benchmark.slug, r.model): r.metrics for r in results}, family)
    count = {
        m: sum(1 for metrics in measured.values() if any(m in p for p in metrics.values()))
        for m in models
    }
    out = []
    for method in methods:
        if method == "plackett-luce":
            found = _pooled(by_bench, benches, models, replicates, seed, family)
        else:
            found = _ordered(method, by_bench, benches, replicates, family)
        scores, draws, note = found
        out.append(_standings(method, models, scores, draws, note, count, sorted(by_bench)))
    return out


def _point(method: str, table: Any, benches: Mapping[str, Benchmark]) -> dict[str, float]:
    if method == "mean":
        return mean_scores(table, benches)
    orders = benchmark_orders(table, benches)
    return borda(orders) if method == "borda" else kemeny(orders)


def _ordered(
    method: str,
    by_bench: Mapping[str, Sequence[Result]],
    benches: Mapping[str, Benchmark],
    replicates: int,
    family: str | None,
) -> tuple[dict[str, float], list[dict[str, float]], str]:
    points = {(s, r.model): dict(r.metrics) for s, rs in by_bench.items() for r in rs}
    scores = _point(method, _table(by_bench, points, family), benches)
    stored = [r.replicates for rs in by_bench.values() for r in rs]
    if any(s is None for s in stored):
        return scores, [], "no intervals: an evaluation without stored bootstrap replicates"
    count = min(replicates, *(s[1].shape[0] for s in stored if s is not None))
    draws = []
    for n in range(count):
        values = {
            (s, r.model): {k: float(r.replicates[1][n, j]) for j, k in enumerate(r.replicates[0])}
            for s, rs in by_bench.items()
            for r in rs
            if r.replicates is not None
        }
        draws.append(_point(method, _table(by_bench, values, family), benches))
    return scores, draws, ""


def _pooled(
    by_bench: Mapping[str, Sequence[Result]],
    benches: Mapping[str, Benchmark],
    models: list[str],
    replicates: int,
    seed: int,
    family: str | None,
) -> tuple[dict[str, float], list[dict[str, float]], str]:
    kept = {
        s: [(r.model, r.evidence) for r in rs if r.evidence is not None]
        for s, rs in by_bench.items()
    }
    if any(len(v) < len(by_bench[s]) for s, v in kept.items()):
        return {}, [], "no per-item evidence for some evaluations: Plackett-Luce needs it"
    data = choices(
        {s: [(m, e) for m, e in v if e is not None] for s, v in kept.items()},
        models,
        {slug: _ranked(bench, family) for slug, bench in benches.items()},
    )
    fitted = plackett_luce(data, len(models))
    present = measured(data, models)
    scores = {m: float(fitted[n]) for n, m in enumerate(models) if m in present}
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(replicates):
        weights = resample(data, rng)
        fit = plackett_luce(data, len(models), weights)
        draws.append({m: float(fit[n]) for n, m in enumerate(models) if m in present})
    return scores, draws, ""


def _ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """1 + the number of models with a strictly higher score."""
    values = list(scores.values())
    return {m: 1 + sum(v > s + 1e-12 for v in values) for m, s in scores.items()}


def _standings(
    method: str,
    models: list[str],
    scores: Mapping[str, float],
    draws: Sequence[Mapping[str, float]],
    note: str,
    count: Mapping[str, int],
    benchmarks: list[str],
) -> Aggregation:
    ranks = _ranks(scores)
    drawn: dict[str, list[int]] = {m: [] for m in scores}
    for draw in draws:
        for m, r in _ranks({k: v for k, v in draw.items() if k in scores}).items():
            drawn[m].append(r)
    rows = []
    for model in sorted(scores, key=lambda m: (ranks[m], -scores[m], m)):
        got = drawn[model]
        interval = (
            (
                int(np.percentile(got, 2.5, method="lower")),
                int(np.percentile(got, 97.5, method="higher")),
            )
            if got
            else None
        )
        rows.append(Standing(model, ranks[model], scores[model], interval, count[model]))
    missing = [m for m in models if m not in scores]
    if missing and not note:
        note = f"not placed (no measurement this method uses): {', '.join(missing)}"
    return Aggregation(method, ABOUT[method], rows, len(draws), note, benchmarks)
