"""The judge agreement card: two or more judges asked about the same caption pairs.

:func:`collect` takes one or more models' prediction files on a test set and gathers the caption
pairs the benchmark's judged tasks would send to a judge, for a stratified sample of the test
items (the same items for every model, each task in proportion to its size). :func:`ask` has
every judge score every pair (through the judgement cache, so a second run asks nothing) and
asks each judge again about a seeded subset (test-retest: those judgements are kept under a key
of their own). :func:`build` computes the card (:mod:`medvidbench.core.judge.agreement`): per
task and rubric aspect, each judge against the first (the reference judge), and the whole jury.

A card holds numbers and the judges' names only: no caption, reference or per-pair score, so a
card of a hidden-label test set can be shown anywhere (:mod:`~medvidbench.core.judge.card_check`
enforces it on a card that arrives from outside).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medvidbench.core.errors import UsageError
from medvidbench.core.judge.agreement import (
    Estimate,
    calibrated_mean,
    cluster_members,
    kendall_tau,
    length_bias,
    ordinal_alpha,
    quadratic_kappa,
    spearman,
    with_interval,
)
from medvidbench.core.judge.card_check import ALL, KIND, VERSION

if TYPE_CHECKING:
    from medvidbench.core.benchmark import Benchmark
    from medvidbench.core.judge.client import Judge
    from medvidbench.core.judge.rubric import Rubric

CALIBRATION_SHARE = 0.25  # the pairs treated as judged by both in the calibration example


@dataclass(frozen=True, slots=True)
class Pair:
    """One (answer, reference) pair a judge scores, and the video it is about."""

    task: str
    prediction: str
    reference: str
    cluster: str

    @property
    def long(self) -> bool:
        """Whether the answer has more words than its reference."""
        return len(self.prediction.split()) > len(self.reference.split())


@dataclass(slots=True)
class Collected:
    """The pairs to judge (each once) and which model's answers used which pair."""

    benchmark: str
    test_set: str  # its sha256
    items: int  # the test items sampled
    models: list[str]
    pairs: list[Pair] = field(default_factory=list)
    uses: list[tuple[int, int]] = field(default_factory=list)  # (model index, pair index)


@dataclass(slots=True)
class Ratings:
    """Each judge's five-aspect scores of every pair (NaN: the judge gave none) and of the
    retest subset."""

    judges: list[dict[str, Any]]  # each judge's identity (model, endpoint, config id)
    aspects: tuple[str, ...]
    scores: list[np.ndarray]  # per judge: pairs x aspects
    retest_index: np.ndarray  # the pairs asked twice
    retest: list[np.ndarray]  # per judge: retest pairs x aspects


def _sample_items(by_task: Mapping[str, list[int]], items: int, seed: int) -> set[int]:
    """``items`` test items, each task's share in proportion to its size (at least one)."""
    rng = np.random.default_rng(seed)
    total = sum(len(v) for v in by_task.values())
    chosen: set[int] = set()
    for task in sorted(by_task):
        pool = by_task[task]
        k = min(len(pool), max(1, round(items * len(pool) / total)))
        chosen.update(int(i) for i in rng.choice(pool, size=k, replace=False))
    return chosen


def collect(
    bench: Benchmark,
    ground_truth: str | Path | bytes,
    predictions: Mapping[str, str | Path | bytes],
    items: int,
    seed: int = 0,
    profile: str | None = None,
) -> Collected:
    """The judged pairs of ``items`` sampled test items, for every model's predictions.

    Raises:
        UsageError: for a benchmark no judge scores, or predictions answering none of its
            judged tasks in full.
    """
    from medvidbench.core.evaluation import plan

    if bench.judging is None:
        raise UsageError(f"no LLM judge scores benchmark {bench.slug!r}")
    gt = bench.load_ground_truth(ground_truth)
    scorers = bench.judged_scorers()
    by_task: dict[str, list[int]] = {}
    for s in gt.samples:
        if s.task in scorers:
            by_task.setdefault(s.task, []).append(s.index)
    chosen = _sample_items(by_task, items, seed)
    out = Collected(bench.slug, gt.sha256, len(chosen), list(predictions))
    index: dict[tuple[str, str, str], int] = {}
    cluster_of = bench.uncertainty.cluster_of
    for m, (model, source) in enumerate(predictions.items()):
        planned = plan(bench, source, gt, profile)
        if not planned.judged:
            raise UsageError(f"{model}: answers none of the judged tasks in full")
        for task in planned.judged:
            samples, texts = planned.inputs(task)
            for sample, text in zip(samples, texts, strict=True):
                if sample.index not in chosen:
                    continue
                judged = scorers[task].plan([sample], [text], planned.rules, "agreement")
                for r in judged.requests:
                    key = (task, r.prediction, r.reference)
                    if key not in index:
                        index[key] = len(out.pairs)
                        out.pairs.append(Pair(task, r.prediction, r.reference, cluster_of(sample)))
                    out.uses.append((m, index[key]))
    return out


def ask(
    judges: Sequence[Judge], collected: Collected, rubric: Rubric, retest: int, seed: int = 0
) -> Ratings:
    """Every judge's scores of every pair, and of ``retest`` pairs asked a second time."""
    from medvidbench.core.judge.cache import cache_key
    from medvidbench.core.judge.client import JudgeRequest

    rng = np.random.default_rng(seed + 1)
    n = len(collected.pairs)
    retest_index = np.sort(rng.choice(n, size=min(retest, n), replace=False)).astype(np.int64)
    aspects = rubric.codes
    ratings = Ratings([], aspects, [], retest_index, [])
    for judge in judges:
        first = [
            JudgeRequest(
                cache_key(judge.config.config_id, p.task, p.prediction, p.reference),
                p.task,
                p.prediction,
                p.reference,
                rubric,
            )
            for p in collected.pairs
        ]
        # The second asking is stored under a key of its own: the cache must not answer it.
        again = [
            JudgeRequest(
                cache_key(judge.config.config_id + ":retest", r.task, r.prediction, r.reference),
                r.task,
                r.prediction,
                r.reference,
                r.rubric,
            )
            for r in (first[i] for i in retest_index)
        ]
        answered = judge.judge_all(first + again)
        ratings.judges.append(
            {
                "model": judge.config.model,
                "endpoint": judge.config.endpoint,
                "config_id": judge.config.config_id,
                "prompt_version": judge.config.prompt_version,
            }
        )
        ratings.scores.append(_matrix(first, answered, aspects))
        ratings.retest.append(_matrix(again, answered, aspects))
    return ratings


def _matrix(requests: Sequence[Any], answered: Mapping[str, Any], aspects: tuple[str, ...]) -> Any:
    out = np.full((len(requests), len(aspects)), np.nan)
    for i, r in enumerate(requests):
        j = answered.get(r.key)
        if j is not None:
            out[i] = [j.scores[a] for a in aspects]
    return out


@dataclass(frozen=True, slots=True)
class Design:
    """How the card's intervals are drawn."""

    replicates: int = 1000
    seed: int = 0


def _est(e: Estimate) -> dict[str, Any]:
    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 4)

    return {"value": r(e.value), "low": r(e.low), "high": r(e.high), "n": e.n}


def _members(clusters: Sequence[str], rows: np.ndarray) -> list[np.ndarray]:
    return [rows[m] for m in cluster_members([clusters[i] for i in rows])]


def _exact(x: np.ndarray, y: np.ndarray) -> float | None:
    return float((x == y).mean()) if len(x) else None


def _aspect_stat(
    statistic: Callable[[np.ndarray, np.ndarray], float | None], a: Any, b: Any, k: int
) -> Callable[[np.ndarray], float | None]:
    """``statistic`` of both judges' scores of aspect ``k`` on a replicate's rows."""

    def on(rows: np.ndarray) -> float | None:
        return statistic(a[rows, k], b[rows, k])

    return on


def _alpha_stat(stacked: Any, k: int) -> Callable[[np.ndarray], float | None]:
    def on(rows: np.ndarray) -> float | None:
        return ordinal_alpha(stacked[:, rows, k])

    return on


def _compare(
    collected: Collected, ratings: Ratings, j: int, tasks: list[str], design: Design
) -> dict[str, Any]:
    """Judge ``j`` against the reference judge (0), per task and over all tasks."""
    a, b = ratings.scores[0], ratings.scores[j]
    both = ~(np.isnan(a).any(axis=1) | np.isnan(b).any(axis=1))
    clusters = [p.cluster for p in collected.pairs]
    task_of = np.array([p.task for p in collected.pairs])
    long = np.array([p.long for p in collected.pairs])
    mean_a, mean_b = a.mean(axis=1), b.mean(axis=1)
    reps, seed = design.replicates, design.seed
    out: dict[str, Any] = {
        "judge": j,
        "kappa": {},
        "exact": {},
        "spearman": {},
        "difference": {},
        "length_bias": {},
        "board_tau": {},
        "calibration": {},
    }
    for task in [*tasks, ALL]:
        rows = np.flatnonzero(both & ((task_of == task) if task != ALL else True))
        members = _members(clusters, rows)
        out["kappa"][task] = {
            asp: _est(with_interval(_aspect_stat(quadratic_kappa, a, b, k), members, reps, seed))
            for k, asp in enumerate(ratings.aspects)
        }
        out["exact"][task] = {
            asp: _est(with_interval(_aspect_stat(_exact, a, b, k), members, reps, seed))
            for k, asp in enumerate(ratings.aspects)
        }
        out["spearman"][task] = _est(
            with_interval(lambda idx: spearman(mean_a[idx], mean_b[idx]), members, reps, seed)
        )
        out["difference"][task] = _est(
            with_interval(
                lambda idx: float((mean_b[idx] - mean_a[idx]).mean()) if len(idx) else None,
                members,
                reps,
                seed,
            )
        )
        out["length_bias"][task] = _est(
            with_interval(
                lambda idx: length_bias(mean_b[idx] - mean_a[idx], long[idx]), members, reps, seed
            )
        )
        out["board_tau"][task] = _board_tau(collected, rows, mean_a, mean_b, design)
        out["calibration"][task] = _calibration(clusters, rows, mean_a, mean_b, design)
    return out


def _board_tau(
    collected: Collected, rows: np.ndarray, mean_a: np.ndarray, mean_b: np.ndarray, design: Design
) -> dict[str, Any]:
    """Kendall's tau between the orders of the models' mean judged scores under both judges."""
    keep = set(rows.tolist())
    uses = np.array([(m, p) for m, p in collected.uses if p in keep], dtype=np.int64)
    n_models = len(collected.models)
    if len(uses) == 0 or n_models < 3:
        return _est(Estimate(None, n=n_models))
    model, pair = uses[:, 0], uses[:, 1]
    clusters = [collected.pairs[p].cluster for p in pair]

    def tau(idx: np.ndarray) -> float | None:
        counts = np.bincount(model[idx], minlength=n_models)
        if (counts == 0).any():
            return None
        sa = np.bincount(model[idx], weights=mean_a[pair[idx]], minlength=n_models) / counts
        sb = np.bincount(model[idx], weights=mean_b[pair[idx]], minlength=n_models) / counts
        return kendall_tau(sa.tolist(), sb.tolist())

    members = cluster_members(clusters)
    return _est(with_interval(tau, members, design.replicates, design.seed, n=n_models))


def _calibration(
    clusters: Sequence[str],
    rows: np.ndarray,
    mean_a: np.ndarray,
    mean_b: np.ndarray,
    design: Design,
) -> dict[str, Any] | None:
    """The calibration example: the reference judge's mean over the task's pairs, estimated
    from the other judge's scores of all of them and both judges' of a random quarter."""
    rng = np.random.default_rng(design.seed + 2)
    n = len(rows)
    size = max(2, round(n * CALIBRATION_SHARE))
    if n < 4 or size >= n:
        return None
    labelled = np.sort(rng.choice(rows, size=size, replace=False))
    got = calibrated_mean(
        mean_b[rows],
        [clusters[i] for i in rows],
        mean_a[labelled],
        mean_b[labelled],
        [clusters[i] for i in labelled],
    )
    if got is None:
        return None
    return {
        "estimate": round(got.estimate, 4),
        "low": round(got.low, 4),
        "high": round(got.high, 4),
        "weight": round(got.weight, 4),
        "labelled": got.labelled,
        "pairs": got.unlabelled,
        "reference_mean": round(float(mean_a[rows].mean()), 4),
        "judge_mean": round(float(mean_b[rows].mean()), 4),
    }


def _jury(
    collected: Collected, ratings: Ratings, tasks: list[str], design: Design
) -> dict[str, Any]:
    """Krippendorff's ordinal alpha of every judge together, per task and aspect."""
    clusters = [p.cluster for p in collected.pairs]
    task_of = np.array([p.task for p in collected.pairs])
    stacked = np.stack(ratings.scores)  # judges x pairs x aspects
    out: dict[str, Any] = {}
    for task in [*tasks, ALL]:
        rows = np.flatnonzero((task_of == task) if task != ALL else np.ones(len(task_of), bool))
        members = _members(clusters, rows)
        out[task] = {
            asp: _est(
                with_interval(
                    _alpha_stat(stacked, k),
                    members,
                    design.replicates,
                    design.seed,
                )
            )
            for k, asp in enumerate(ratings.aspects)
        }
    return out


def _retest(collected: Collected, ratings: Ratings, design: Design) -> list[dict[str, Any]]:
    """Each judge against itself on the pairs asked twice (every aspect pooled)."""
    idx = ratings.retest_index
    clusters = [collected.pairs[i].cluster for i in idx]
    members = cluster_members(clusters)
    out = []
    for first, again in zip(ratings.scores, ratings.retest, strict=True):
        x, y = first[idx], again
        ok = ~(np.isnan(x).any(axis=1) | np.isnan(y).any(axis=1))

        def kappa(rows: np.ndarray, x: Any = x, y: Any = y, ok: Any = ok) -> float | None:
            rows = rows[ok[rows]]
            return quadratic_kappa(x[rows].ravel(), y[rows].ravel()) if len(rows) else None

        def exact(rows: np.ndarray, x: Any = x, y: Any = y, ok: Any = ok) -> float | None:
            rows = rows[ok[rows]]
            return float((x[rows] == y[rows]).mean()) if len(rows) else None

        out.append(
            {
                "pairs": int(ok.sum()),
                "kappa": _est(with_interval(kappa, members, design.replicates, design.seed)),
                "exact": _est(with_interval(exact, members, design.replicates, design.seed)),
            }
        )
    return out


def build(collected: Collected, ratings: Ratings, design: Design = Design()) -> dict[str, Any]:
    """The agreement card (numbers and judge names only)."""
    tasks = sorted({p.task for p in collected.pairs})
    clusters = {p.cluster for p in collected.pairs}
    answered = [int((~np.isnan(s).any(axis=1)).sum()) for s in ratings.scores]
    return {
        "kind": KIND,
        "version": VERSION,
        "benchmark": collected.benchmark,
        "test_set": collected.test_set,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "aspects": list(ratings.aspects),
        "tasks": tasks,
        "judges": [{**j, "answered": n} for j, n in zip(ratings.judges, answered, strict=True)],
        "design": {
            "items": collected.items,
            "pairs": len(collected.pairs),
            "pairs_per_task": {t: sum(p.task == t for p in collected.pairs) for t in tasks},
            "clusters": len(clusters),
            "models": len(collected.models),
            "long_pairs": sum(p.long for p in collected.pairs),
            "retest_pairs": len(ratings.retest_index),
            "replicates": design.replicates,
            "seed": design.seed,
            "calibration_share": CALIBRATION_SHARE,
        },
        "comparisons": [
            _compare(collected, ratings, j, tasks, design) for j in range(1, len(ratings.scores))
        ],
        "alpha": _jury(collected, ratings, tasks, design),
        "retest": _retest(collected, ratings, design),
    }
