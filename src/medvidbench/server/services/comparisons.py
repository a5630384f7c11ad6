"""Boards compared: one entry against others on their paired replicates (the compare page),
and the smallest difference between neighbouring entries the test set can detect (the About
and compare pages). The replicates are the ones the board ranks with (services/boards.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from medvidbench.server.runtime import Runtime
from medvidbench.server.services.board_reads import KINDS, read_board
from medvidbench.server.services.boards import BoardRow, board_rows
from medvidbench.server.services.evaluations import current_evaluations
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.store import board_cache


@dataclass(slots=True)
class Comparison:
    """Entry ``other`` against entry ``reference``, per metric: the difference and its paired
    bootstrap interval (None with ``note`` when the two cannot be paired)."""

    reference: str
    other: str
    differences: list[Any]
    note: str = ""


def compare(runtime: Runtime, rows: list[BoardRow], slug: str) -> list[Comparison]:
    """Each chosen row after the first against the first, paired on their shared replicates."""
    from medvidbench.core.statistics import Bootstrap, paired, usable

    if len(rows) < 2:
        return []
    definition = runtime.definition(slug)
    ids = [r.submission_id for r in rows if r.submission_id]
    with runtime.sessions() as session:
        evals = current_evaluations(session, ids, definition)
    stats = [
        usable(evals[r.submission_id].statistics, definition.labels)
        if r.submission_id in evals
        else None
        for r in rows
    ]
    keys = list(definition.metric_keys)
    first, base = rows[0], stats[0]
    out = []
    for row, other in zip(rows[1:], stats[1:], strict=True):
        shared = Bootstrap.stamp(base)
        if base is None or other is None or shared is None or shared != Bootstrap.stamp(other):
            reason = (
                "reported numbers come without per-item results"
                if first.submission_id is None or row.submission_id is None
                else "not bootstrapped together (scored without a bootstrap, or with other "
                "settings)"
            )
            out.append(
                Comparison(first.model_name, row.model_name, [], f"no paired interval: {reason}")
            )
            continue
        va, vb = Bootstrap.aligned(base, keys), Bootstrap.aligned(other, keys)
        # the same test set and seed: the clusters each metric's items fall in are the same
        clusters = base.get("metric_clusters") or None
        differences = paired(vb, va, keys, row.metrics, first.metrics, clusters=clusters)
        out.append(Comparison(first.model_name, row.model_name, differences))
    return out


def detectable(runtime: Runtime, slug: str) -> dict[str, Any] | None:
    """Per ranked metric, the smallest difference the test set can detect (80 % power, paired
    two-sided 5 %: core/intervals.py), for neighbouring rows of the board with the most
    bootstrapped rows: the median over its neighbouring pairs. None without two such rows."""
    bench_id = current_benchmark(runtime, slug).id
    with runtime.sessions() as session:
        current = board_cache.generation(session, bench_id)
    return runtime.boards.get(
        ("detectable", bench_id), current, lambda: _detectable(runtime, bench_id)
    )


def _metric_clusters(runtime: Runtime, evaluation_id: int) -> dict[str, int]:
    """Per metric, the clusters its items fall in, as an evaluation's bootstrap counted them
    (the same for every evaluation of the test set)."""
    from sqlalchemy import select

    from medvidbench.server.store.models import Evaluation

    with runtime.sessions() as session:
        stats = session.scalar(select(Evaluation.statistics).where(Evaluation.id == evaluation_id))
    return {str(k): int(v) for k, v in ((stats or {}).get("metric_clusters") or {}).items()}


def _detectable(runtime: Runtime, bench_id: int) -> dict[str, Any] | None:
    from medvidbench.core.intervals import minimum_detectable
    from medvidbench.core.standings import MISSING_CODE

    best: tuple[str, list[np.ndarray], Any, int] | None = None
    for kind in KINDS:
        read = read_board(runtime, kind, bench_id)
        codes, one = [], 0
        for r in board_rows(runtime, kind, benchmark_id=bench_id):
            ev = read.evals.get(r.submission_id) if r.submission_id else None
            held = read.prepared.get(ev.id) if ev is not None else None
            if r.rank_interval is not None and held is not None and held.codes is not None:
                codes.append(held.codes)  # bootstrapped with the board: paired
                one = one or ev.id  # type: ignore[union-attr]
        if len(codes) >= 2 and (best is None or len(codes) > len(best[1])):
            best = (kind, codes, read.definition, one)
    if best is None:
        return None
    kind, codes, definition, one = best
    clusters = _metric_clusters(runtime, one)
    # neighbours equal on every metric and resample: identical entries (the same baseline
    # submitted twice), which say nothing about how large a real lead must be
    identical = sum(bool(np.array_equal(a, b)) for a, b in itertools.pairwise(codes))
    values = {}
    for j, m in enumerate(m for m in definition.metrics if m.ranked):
        found = []
        for a, b in itertools.pairwise(codes):
            x, y = a[j], b[j]
            n = min(len(x), len(y))
            if (x == MISSING_CODE).any() or (y == MISSING_CODE).any() or n < 2:
                continue
            if np.ptp(x[:n]) == 0 and np.ptp(y[:n]) == 0:
                continue  # no replicates of this metric: nothing to measure
            if np.array_equal(x[:n], y[:n]):
                continue  # the same on every resample: says nothing about a real lead
            # the rank codes hold the values to 3 decimals (negated where higher is better)
            mdd = minimum_detectable(
                (x[:n] - y[:n]).astype(np.float64) / 1000.0, clusters.get(m.key)
            )
            if mdd is not None:
                found.append(mdd)
        if found:
            values[m.key] = float(np.median(found))
    return {"board": kind, "pairs": len(codes) - 1, "identical": identical, "by_metric": values}
