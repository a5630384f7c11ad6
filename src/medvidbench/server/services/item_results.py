"""Per-item results kept with an evaluation, for the item browser of public-label benchmarks.

They are written once, when a submission is scored (each rule-based task's per-sample outcomes,
with the answer cut to a display length), and a view only reads them back a page at a time. A
view never opens the stored upload nor parses an answer again: a hostile answer costs its
parser once, in a worker, never in a web process per visitor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select

from medvidbench.core.benchmark import Benchmark
from medvidbench.core.scoring import SampleResult, TaskResult
from medvidbench.core.submission import MatchedSubmission
from medvidbench.server.store.models import EvaluationItem

ANSWER_CHARS = 600
NOTE_CHARS = 200
_BATCH = 2_000


@dataclass(slots=True)
class StoredItem:
    """One item's stored result, as the browser reads it."""

    sample_index: int
    answer: str
    parsed: bool
    value: float | None
    values: dict[str, float]
    note: str
    box: list[float] | None

    def result(self, dataset: str) -> SampleResult:
        """The stored outcome in the shape a benchmark's item drawing reads."""
        return SampleResult(
            self.sample_index, dataset, self.parsed, self.values, self.note, {"box": self.box}
        )


def wanted(definition: Benchmark) -> bool:
    """Whether a benchmark's evaluations keep per-item results (public labels only: a hidden
    test set's items are never shown, so they are never kept)."""
    return definition.labels == "public"


def first_metric(definition: Benchmark, task: str) -> str:
    """The metric an item is judged by in the browser (a 0-1 score such as an IoU)."""
    return str(definition.scorers()[task].metric_keys[0])


def _display(answer: Any) -> str:
    text = answer if isinstance(answer, str) else str(answer)
    return text[:ANSWER_CHARS]


def item_rows(
    definition: Benchmark, matched: MatchedSubmission, results: Sequence[TaskResult]
) -> list[dict[str, Any]]:
    """The rows to keep for ``results`` (the rule-based tasks' outcomes of one scoring)."""
    rows: list[dict[str, Any]] = []
    for result in results:
        metric = first_metric(definition, result.task)
        for r in result.samples:
            values = dict(r.values) if r.values else None
            box = (r.extra or {}).get("box")
            rows.append(
                {
                    "task": result.task,
                    "sample_index": r.index,
                    "answer": _display(matched.predictions[r.index]),
                    "parsed": r.parsed,
                    "value": values.get(metric) if values else None,
                    "values": values,
                    "note": (r.note or "")[:NOTE_CHARS],
                    "box": [float(v) for v in box] if box is not None else None,
                }
            )
    return rows


def store(session: Any, evaluation_id: int, rows: Sequence[dict[str, Any]]) -> None:
    """Keep ``rows`` for an evaluation (in the caller's transaction)."""
    for start in range(0, len(rows), _BATCH):
        batch = [{**row, "evaluation_id": evaluation_id} for row in rows[start : start + _BATCH]]
        session.execute(insert(EvaluationItem), batch)


def kept(session: Any, evaluation_id: int) -> bool:
    """Whether an evaluation has per-item results (those stored before they were kept do not)."""
    found = session.scalar(
        select(EvaluationItem.id).where(EvaluationItem.evaluation_id == evaluation_id).limit(1)
    )
    return found is not None


def tasks_of(session: Any, evaluation_id: int) -> set[str]:
    return set(
        session.scalars(
            select(EvaluationItem.task)
            .where(EvaluationItem.evaluation_id == evaluation_id)
            .distinct()
        )
    )


def page_of(
    session: Any,
    evaluation_id: int,
    task: str,
    bucket: tuple[float, float] | None,
    failed_only: bool,
    offset: int,
    limit: int,
) -> tuple[int, list[StoredItem]]:
    """How many of a task's stored items pass the filters, and one page of them, in test order.

    ``bucket`` keeps items whose first metric is in [low, high)."""
    where = [EvaluationItem.evaluation_id == evaluation_id, EvaluationItem.task == task]
    if failed_only:
        where.append(EvaluationItem.parsed.is_(False))
    if bucket is not None:
        where += [EvaluationItem.value >= bucket[0], EvaluationItem.value < bucket[1]]
    total = int(session.scalar(select(func.count()).select_from(EvaluationItem).where(*where)))
    rows = session.scalars(
        select(EvaluationItem)
        .where(*where)
        .order_by(EvaluationItem.sample_index)
        .offset(offset)
        .limit(limit)
    )
    return total, [
        StoredItem(
            r.sample_index,
            r.answer,
            r.parsed,
            r.value,
            dict(r.values or {}),
            r.note,
            list(r.box) if r.box is not None else None,
        )
        for r in rows
    ]
