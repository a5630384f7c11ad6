"""Average-rank ranking of a board, exactly as the published leaderboard ranks (metrics.md §6).

1. Each ranked metric of the metric table is ranked on values rounded to 3 decimals, best first
   in its own direction (MedVidBench's are all higher-is-better), ties sharing the smaller rank
   (1, 1, 3), missing values after all present ones.
2. Rows are ordered by average rank, then: more first places; lower sum of ranks; higher sum of
   value / column best (for a lower-is-better column, best / value; a column whose best is
   <= 0 or missing adds 0); model name.
3. Places are 1..n without gaps; each board is ranked within itself. (The rank a board shows
   is 1 + the number of rows significantly better in its paired replicates:
   core/standings.py.)

A pending (not yet judged) metric is missing, not zero. Also reported per row: the number of
metrics present and the normalised average (each value on 0-1 with 1 the best, as its metric's
scale and direction say: :meth:`Metric.normalised`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from medvidbench.core.benchmark import Metric


@dataclass(slots=True)
class Ranked:
    """One row of a ranked board."""

    key: object
    name: str
    rank: int
    average_rank: float
    first_places: int
    rank_sum: int
    normalised_sum: float
    metrics_present: int
    normalised_average: float | None
    metric_ranks: dict[str, int]


def metric_ranks(values: Sequence[float | None], higher_is_better: bool = True) -> list[int]:
    """Competition ranks ("min"), best first; missing values share the rank after all others.

    Examples:
        >>> metric_ranks([0.5, 0.5, 0.4, None])
        [1, 1, 3, 4]
        >>> metric_ranks([0.5, 0.5, 0.4, None], higher_is_better=False)
        [2, 2, 1, 4]
    """
    present = sorted((v for v in values if v is not None), reverse=higher_is_better)
    first: dict[float, int] = {}
    for i, v in enumerate(present):
        first.setdefault(v, i + 1)
    return [first[v] if v is not None else len(present) + 1 for v in values]


def rank_rows(
    rows: Sequence[tuple[object, str, Mapping[str, float | None]]],
    metrics: Sequence[Metric],
) -> list[Ranked]:
    """Rank ``(key, model name, {metric key: value})`` rows of one board."""
    return rank_rounded(
        [(key, name) for key, name, _ in rows],
        [rounded_values(values, metrics) for _, _, values in rows],
        metrics,
    )


def rounded_values(values: Mapping[str, float | None], metrics: Sequence[Metric]) -> list[float]:
    """A row's values as the board compares them, in the order of ``metrics``: rounded to 3
    decimals (Python's ``round``), NaN where missing. Ranks, the tie-breaks and the normalised
    average all use these.

    Examples:
        >>> from medvidbench.core.benchmark import Metric
        >>> rounded_values({"a": 0.12345}, [Metric("a", "A", "t", "a"), Metric("b", "B", "t", "b")])
        [0.123, nan]
    """
    return [math.nan if (v := values.get(m.key)) is None else round(float(v), 3) for m in metrics]


def rank_rounded(
    rows: Sequence[tuple[object, str]],
    rounded: Sequence[Sequence[float]],
    metrics: Sequence[Metric],
) -> list[Ranked]:
    """:func:`rank_rows` of ``(key, model name)`` rows whose values are already
    :func:`rounded_values` (a board keeps them per evaluation, which never changes).

    Ranks and terms column by column over every row at once (a board of a thousand rows ranks in
    a few milliseconds); each row's two sums of floats (the normalised sum that breaks ties, the
    normalised average) by Python's own ``sum`` over its terms in column order, as the rule
    written out row by row adds them, so that every tie-break compares the same numbers on every
    Python version (``sum`` of floats is compensated since 3.12; tests/test_ranking.py checks
    against the rule row by row). A NaN value counts as missing."""
    every = [m.key for m in metrics]
    values = np.array(rounded, dtype=np.float64).reshape(len(rows), len(every))
    present = ~np.isnan(values)
    ranked = [j for j, m in enumerate(metrics) if m.ranked]
    ranks = np.empty((len(rows), len(ranked)), dtype=np.int64)
    # 0.0 where a column adds nothing: a sum, plain or compensated, is unchanged by it
    terms = np.zeros((len(rows), len(ranked)))
    units = np.zeros((len(rows), len(every)))
    with np.errstate(invalid="ignore", divide="ignore"):  # infinite values: NaN terms, as before
        for n, j in enumerate(ranked):
            ranks[:, n], terms[:, n] = _column(
                values[:, j], present[:, j], metrics[j].higher_is_better
            )
        for j, m in enumerate(metrics):
            low, high = m.bounds
            unit = (values[:, j] - low) / (high - low)
            units[:, j] = np.where(present[:, j], unit if m.higher_is_better else 1.0 - unit, 0.0)
    norm = [sum(row) for row in terms.tolist()]
    normalised = [sum(row) for row in units.tolist()]
    counts = present.sum(axis=1)
    rank_sum = ranks.sum(axis=1)
    out = [
        Ranked(
            key=key,
            name=name,
            rank=0,
            average_rank=total / len(ranked) if ranked else 0.0,
            first_places=firsts,
            rank_sum=total,
            normalised_sum=summed,
            metrics_present=count,
            normalised_average=average / count if count else None,
            metric_ranks=dict(zip((every[j] for j in ranked), row_ranks, strict=True)),
        )
        for (key, name), total, firsts, summed, count, average, row_ranks in zip(
            rows,
            rank_sum.tolist(),
            (ranks == 1).sum(axis=1).tolist(),
            norm,
            counts.tolist(),
            normalised,
            ranks.tolist(),
            strict=True,
        )
    ]
    out.sort(key=lambda r: (r.average_rank, -r.first_places, r.rank_sum, -r.normalised_sum, r.name))
    for n, row in enumerate(out, start=1):
        row.rank = n
    return out


def _column(
    values: np.ndarray, present: np.ndarray, higher_is_better: bool
) -> tuple[np.ndarray, np.ndarray]:
    """One ranked column: its competition ranks (:func:`metric_ranks`) and each row's term of
    the normalised sum (value / the column's best; best / value where lower is better; 0.0
    where the value is missing or either is not positive)."""
    found = np.sort(values[present])
    if higher_is_better:  # 1 + the number of larger values
        ranks = 1 + len(found) - np.searchsorted(found, values, side="right")
    else:  # 1 + the number of smaller values
        ranks = 1 + np.searchsorted(found, values, side="left")
    ranks[~present] = len(found) + 1
    term = np.zeros(len(values))
    if len(found):
        best = found[-1] if higher_is_better else found[0]
        if best > 0:
            use = present & (values > 0)
            term[use] = values[use] / best if higher_is_better else best / values[use]
    return ranks, term
