"""MedVidBench's balanced aggregation, shared by SA (aspects) and CVS (components).

Per dataset, the mean over the parts (SA's aspects, CVS's components) of each part's accuracy
over the samples that count it; overall, the mean over datasets. The same definition as ratios
of per-sample sums (:func:`balanced_linearised`) gives the bootstrap intervals, and the contract
test checks that the two agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from medvidbench.core.scoring import (
    SampleResult,
    TaskResult,
    diagnostics,
    fmean,
    group_by_dataset,
    mean_or_none,
)

if TYPE_CHECKING:
    from medvidbench.core.statistics import Linearised


def balanced_accuracy(rows: Sequence[dict[str, float]], prefix: str) -> float:
    """Mean over the parts named ``prefix + name`` of each part's accuracy over the rows that
    count it (SA's aspects, CVS's components). 0.0 when nothing was countable: the task was
    answered, so it is scored, as the published leaderboard scores it."""
    per: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith(prefix):
                per.setdefault(key, []).append(value)
    return fmean([sum(v) / len(v) for v in per.values()]) if per else 0.0


def mean_abs_error(rows: Sequence[dict[str, float]]) -> float | None:
    """Mean of the ``ae:`` entries of per-sample rows."""
    return mean_or_none([v for row in rows for k, v in row.items() if k.startswith("ae:")])


def balanced_task_result(
    task: str, key: str, prefix: str, secondary: str, results: list[SampleResult]
) -> TaskResult:
    """Shared aggregation of SA and CVS: per dataset a balanced accuracy, the secondary
    accuracy (level or rating) and the MAE; overall the mean over datasets."""
    per_dataset: dict[str, dict[str, float | int | None]] = {}
    for d, rs in group_by_dataset(results).items():
        rows = [r.values for r in rs if r.values is not None]
        per_dataset[d] = {
            key: balanced_accuracy(rows, prefix),
            "count": len(rs),
            "evaluated": len(rows),
            f"{secondary}_accuracy": mean_or_none([row[secondary] for row in rows]),
            "mae": mean_abs_error(rows),
        }
    overall = mean_or_none([float(v[key] or 0.0) for v in per_dataset.values()])
    rows = [r.values for r in results if r.values is not None]
    diag = diagnostics(results)
    diag[f"{secondary}_accuracy"] = mean_or_none([row[secondary] for row in rows])
    diag["mae"] = mean_abs_error(rows)
    return TaskResult(task, {key: overall}, per_dataset, diag, results)


def balanced_linearised(
    task: str, key: str, prefix: str, results: Sequence[SampleResult]
) -> Linearised:
    """:func:`balanced_task_result`'s metric as ratios of sums: per dataset and part, the part's
    correct count over its counted samples, weighted 1 / (datasets x the dataset's parts); a
    dataset with no countable part enters as 0, as the aggregate counts it (also in a resample
    that draws only its unreadable answers)."""
    from medvidbench.core.statistics import Linearised, Ratio

    out = Linearised()
    parts: dict[str, set[str]] = {}
    for r in results:
        feats: dict[str, float] = {f"{task}/{r.dataset}/#samples": 1.0}
        parts.setdefault(r.dataset, set())
        for name, value in (r.values or {}).items():
            if name.startswith(prefix):
                feats[f"{task}/{r.dataset}/{name}"] = float(value)
                feats[f"{task}/{r.dataset}/{name}#n"] = 1.0
                parts[r.dataset].add(name)
        out.rows.append((r.index, feats))
    terms = []
    for dataset, names in sorted(parts.items()):
        share = 1.0 / len(parts)
        if not names:
            terms.append(Ratio(f"{task}/#zero", f"{task}/{dataset}/#samples", share))
        for name in sorted(names):
            base = f"{task}/{dataset}/{name}"
            # a dataset drawn with only unreadable answers scores 0, as the aggregate does
            terms.append(
                Ratio(base, f"{base}#n", share / len(names), present=f"{task}/{dataset}/#samples")
            )
    out.formulas[key] = terms
    return out
