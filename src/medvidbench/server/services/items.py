"""Per-item results of a submission, for benchmarks whose test labels are public.

When anyone can read the labels, showing a submitter (and everyone) each item's answer, score and
reference costs nothing and explains the numbers. A benchmark with hidden labels never gets here:
the request is refused before anything is loaded. Results are recomputed from the stored file
with the benchmark's own scorer (a fraction of a second), not stored twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from medvidbench.core.errors import NotFoundError, UsageError
from medvidbench.core.scoring import Context
from medvidbench.server.lifecycle import ON_BOARD
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.submissions import get_submission
from medvidbench.server.store.models import Benchmark, User

PER_PAGE = 50
ANSWER_CHARS = 600
# Buckets of an item's first metric (a 0-1 score such as an IoU): label -> [low, high).
BUCKETS: dict[str, tuple[float, float]] = {
    "0": (0.0, 1e-12),
    "0-0.3": (1e-12, 0.3),
    "0.3-0.5": (0.3, 0.5),
    "0.5-0.7": (0.5, 0.7),
    "0.7-1": (0.7, 1.0 + 1e-9),
}


@dataclass(slots=True)
class ItemRow:
    """One item as the browser shows it (the reference is public for these benchmarks)."""

    key: str
    answer: str
    value: float | None
    values: dict[str, float]
    parsed: bool
    note: str
    drawing: dict[str, Any] | None


@dataclass(slots=True)
class ItemPage:
    submission_id: int
    model_name: str
    slug: str
    tasks: list[str]
    task: str
    metric: str
    bucket: str
    failed_only: bool
    page: int
    pages: int
    matched: int
    rows: list[ItemRow] = field(default_factory=list)


def item_page(
    runtime: Runtime,
    submission_id: int,
    viewer: User | None,
    task: str = "",
    bucket: str = "",
    failed_only: bool = False,
    page: int = 1,
) -> ItemPage:
    """One page of a scored submission's items of ``task``, filtered by score bucket and by
    whether the answer could be read.

    Raises:
        NotFoundError: for an unknown or unscored submission, or a benchmark whose labels are
            hidden (its per-item results are never shown).
        UsageError: for an unknown task or bucket.
    """
    sub = get_submission(runtime, submission_id, viewer)
    with runtime.sessions() as session:
        test_set = session.scalar(select(Benchmark).where(Benchmark.id == sub.benchmark_id))
    assert test_set is not None
    definition = runtime.definition(test_set.slug)
    if definition.labels != "public":
        raise NotFoundError(f"{definition.title} keeps its labels hidden: no per-item results")
    if sub.status not in ON_BOARD:
        raise NotFoundError(f"submission {submission_id} is not scored")
    if bucket and bucket not in BUCKETS:
        raise UsageError(f"bucket must be one of {', '.join(BUCKETS)}")
    gt = runtime.ground_truth(test_set.gt_sha256, test_set.slug)
    matched = definition.validate_submission(runtime.read(runtime.submission_path(sub.id)), gt)
    answered = [
        t.name
        for t in definition.tasks
        if matched.report.coverage.get(t.name)
        and matched.report.coverage[t.name].status == "complete"
    ]
    if not answered:
        raise NotFoundError(f"submission {submission_id} answers no task")
    task = task or answered[0]
    if task not in answered:
        raise UsageError(f"task must be one of {', '.join(answered)}")
    indices = [s.index for s in gt.samples if s.task == task]
    items = [gt.samples[i] for i in indices]
    texts = [matched.predictions[i] for i in indices]
    scorer = definition.scorers()[task]
    result = scorer.evaluate(
        items,
        texts,
        definition.profile(),
        Context(embedder_factory=definition.embedder, options=dict(matched.options)),
    )
    metric = scorer.metric_keys[0]
    chosen = []
    for item, answer, r in zip(items, texts, result.samples, strict=True):
        value = r.values.get(metric) if r.values else None
        if failed_only and r.parsed:
            continue
        if bucket:
            low, high = BUCKETS[bucket]
            if value is None or not low <= value < high:
                continue
        chosen.append((item, answer, r, value))
    pages = max(1, -(-len(chosen) // PER_PAGE))
    page = min(max(1, page), pages)
    rows = [
        ItemRow(
            key=item.sample_id,
            answer=(answer if isinstance(answer, str) else str(answer))[:ANSWER_CHARS],
            value=value,
            values=dict(r.values or {}),
            parsed=r.parsed,
            note=r.note,
            drawing=definition.item_drawing(item, r) if definition.item_drawing else None,
        )
        for item, answer, r, value in chosen[(page - 1) * PER_PAGE : page * PER_PAGE]
    ]
    return ItemPage(
        sub.id,
        sub.model_name,
        definition.slug,
        answered,
        task,
        metric,
        bucket,
        failed_only,
        page,
        pages,
        len(chosen),
        rows,
    )
