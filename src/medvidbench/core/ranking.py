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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    ranked = [m for m in metrics if m.ranked]
    keys = [m.key for m in ranked]
    # every value rounded once: ranks, the tie-breaks and the normalised average all use it
    every = [m.key for m in metrics]
    rounded = [
        {k: None if (v := r[2].get(k)) is None else round(float(v), 3) for k in every} for r in rows
    ]
    columns = [[r[k] for r in rounded] for k in keys]
    rank_columns = [
        metric_ranks(c, m.higher_is_better) for c, m in zip(columns, ranked, strict=True)
    ]
    bests = [
        (max if m.higher_is_better else min)((x for x in c if x is not None), default=None)
        for c, m in zip(columns, ranked, strict=True)
    ]
    scored = [(m.higher_is_better, best) for m, best in zip(ranked, bests, strict=True)]
    out = []
    for i, (key, name, _) in enumerate(rows):
        ranks = [rc[i] for rc in rank_columns]
        norm = sum(
            (v / best if higher else best / v)
            for v, (higher, best) in zip((c[i] for c in columns), scored, strict=True)
            if v is not None and best is not None and best > 0 and v > 0
        )
        present = [n for m in metrics if (n := m.normalised(rounded[i][m.key])) is not None]
        out.append(
            Ranked(
                key=key,
                name=name,
                rank=0,
                average_rank=sum(ranks) / len(ranks) if ranks else 0.0,
                first_places=ranks.count(1),
                rank_sum=sum(ranks),
                normalised_sum=norm,
                metrics_present=len(present),
                normalised_average=sum(present) / len(present) if present else None,
                metric_ranks=dict(zip(keys, ranks, strict=True)),
            )
        )
    out.sort(key=lambda r: (r.average_rank, -r.first_places, r.rank_sum, -r.normalised_sum, r.name))
    for n, row in enumerate(out, start=1):
        row.rank = n
    return out
