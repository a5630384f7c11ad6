"""Plackett-Luce on per-item orders, pooled across benchmarks (ONEBench, Ghosh et al. 2025):
the consensus board's fourth aggregation (:mod:`medvidbench.core.consensus`).

On each item, and each metric of it, every model that scored strictly better than others is a
choice among itself and those others (a top-1 observation; equal values say nothing). A
Plackett-Luce model is fitted to all of them by iterative Luce spectral ranking with a small
prior (:data:`PRIOR`); its bootstrap replicates resample each benchmark's clusters of items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from medvidbench.core.benchmark import Metric
from medvidbench.core.evidence import SCORED, UNREADABLE, Evidence

PRIOR = 0.01  # the Luce spectral ranking's prior (ONEBench's l2 regularisation)


@dataclass(slots=True)
class Choices:
    """Top-1 observations: each row, a choice set (``sets``) and its winner (``winners``),
    with the item it came from (``items``, to resample) in its benchmark (``groups``)."""

    sets: np.ndarray  # observations x models, 0/1
    winners: np.ndarray  # observations
    items: np.ndarray  # observations: the item's row in its benchmark's cluster table
    groups: list[tuple[str, np.ndarray]]  # per benchmark: its items' cluster codes


def choices(
    evidences: Mapping[str, Sequence[tuple[str, Evidence]]],
    models: Sequence[str],
    ranked: Mapping[str, Sequence[Metric]],
) -> Choices:
    """Every top-1 observation of every item and of every metric in ``ranked`` (per
    benchmark): on each, every model that scored strictly better than some others beats those
    others. Judged metrics are compared only between evaluations of one judge configuration."""
    column = {m: n for n, m in enumerate(models)}
    sets: list[np.ndarray] = []
    winners: list[int] = []
    items: list[int] = []
    groups: list[tuple[str, np.ndarray]] = []
    offset = 0
    for slug, pairs in evidences.items():
        if not pairs:
            continue
        first = pairs[0][1]  # its items are the benchmark's here; the others are matched to them
        keys = first.keys
        _, codes = np.unique(np.asarray(first.clusters), return_inverse=True)
        groups.append((slug, codes))
        for metric in ranked[slug]:
            if metric.key not in first.metrics:
                continue
            where = first.positions(metric.task)
            for judge in sorted({e.judge if metric.judged else "" for _, e in pairs}):
                stack, who = [], []
                for model, ev in pairs:
                    if metric.judged and ev.judge != judge:
                        continue
                    row = _values_on(ev, first, metric.key, metric.task)
                    if row is None:
                        continue
                    stack.append(row if metric.higher_is_better else -row)
                    who.append(column[model])
                if len(who) < 2:
                    continue
                _observe(np.asarray(stack), who, len(models), where + offset, sets, winners, items)
        offset += len(keys)
    width = len(models)
    return Choices(
        np.asarray(sets, dtype=np.float64).reshape(-1, width),
        np.asarray(winners, dtype=np.int64),
        np.asarray(items, dtype=np.int64),
        groups,
    )


def _values_on(ev: Evidence, reference: Evidence, key: str, task: str) -> np.ndarray | None:
    """A metric's usable values (scored or unreadable; NaN otherwise) on the reference's items
    of ``task``, matched by item key: an evaluation of a re-issued test set lines up with the
    others wherever the two share items, and is missing elsewhere."""
    got = ev.metrics.get(key)
    if got is None:
        return None
    ok = (got.status == SCORED) | (got.status == UNREADABLE)
    mine = np.where(ok, got.values.astype(float), np.nan)
    if ev.keys == reference.keys:
        return mine
    position = {ev.keys[i]: n for n, i in enumerate(ev.positions(task))}
    wanted = [position.get(reference.keys[i]) for i in reference.positions(task)]
    return np.array([np.nan if n is None else mine[n] for n in wanted])


def _observe(
    values: np.ndarray,
    who: list[int],
    width: int,
    item_rows: np.ndarray,
    sets: list[np.ndarray],
    winners: list[int],
    items: list[int],
) -> None:
    """The top-1 observations of one metric: ``values`` is models x items (NaN: none)."""
    for n in range(values.shape[1]):
        column = values[:, n]
        seen = ~np.isnan(column)
        if seen.sum() < 2:
            continue
        for a in np.flatnonzero(seen):
            worse = seen & (column < column[a])
            if not worse.any():
                continue
            chosen = np.zeros(width)
            chosen[[who[k] for k in np.flatnonzero(worse)]] = 1.0
            chosen[who[a]] = 1.0
            sets.append(chosen)
            winners.append(who[a])
            items.append(int(item_rows[n]))


def plackett_luce(data: Choices, width: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Log-strengths (mean 0) of a Plackett-Luce model fitted to the top-1 observations by
    iterative Luce spectral ranking with the prior :data:`PRIOR` (``weights``: per
    observation, a resample's counts)."""
    strengths = np.ones(width)
    if len(data.winners) == 0:
        return np.zeros(width)
    weight = np.ones(len(data.winners)) if weights is None else weights
    winners = np.zeros((len(data.winners), width))
    winners[np.arange(len(data.winners)), data.winners] = 1.0
    for _ in range(500):
        denom = data.sets @ strengths
        rates = (data.sets * (weight / denom)[:, None]).T @ winners  # loser i -> winner j
        rates += PRIOR
        np.fill_diagonal(rates, 0.0)
        found = _stationary(rates)
        if np.max(np.abs(np.log(found) - np.log(strengths))) < 1e-9:
            strengths = found
            break
        strengths = found
    logs: np.ndarray = np.log(strengths)
    centred: np.ndarray = logs - logs.mean()
    return centred


def _stationary(rates: np.ndarray) -> np.ndarray:
    """The stationary distribution of the continuous-time chain with these rates, scaled to
    sum to the number of states."""
    n = rates.shape[0]
    generator = rates - np.diag(rates.sum(axis=1))
    system = np.vstack([generator.T, np.ones(n)])
    target = np.zeros(n + 1)
    target[-1] = n
    found, *_ = np.linalg.lstsq(system, target, rcond=None)
    out: np.ndarray = np.clip(found, 1e-300, None)
    return out


def measured(data: Choices, models: list[str]) -> set[str]:
    """The models of some observation."""
    seen = data.sets.sum(axis=0) > 0
    return {m for n, m in enumerate(models) if seen[n]}


def resample(data: Choices, rng: np.random.Generator) -> np.ndarray:
    """Each observation's weight in one bootstrap replicate: its item's cluster drawn as many
    times as the replicate draws it, clusters resampled within each benchmark."""
    item_weight = np.empty(sum(len(codes) for _, codes in data.groups))
    at = 0
    for _, codes in data.groups:
        clusters = int(codes.max()) + 1 if len(codes) else 0
        drawn = np.bincount(rng.integers(0, clusters, clusters), minlength=clusters)
        item_weight[at : at + len(codes)] = drawn[codes]
        at += len(codes)
    out: np.ndarray = item_weight[data.items]
    return out
