"""Per-item results of a submission, for benchmarks whose test labels are public.

When anyone can read the labels, showing a submitter (and everyone) each item's answer, score and
reference costs nothing and explains the numbers. A benchmark with hidden labels never gets here:
the request is refused before anything is loaded. The results are those kept when the
submission was scored (:mod:`item_results`): a view never opens the stored upload or parses an
answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import select

from medvidbench.core.errors import NotFoundError, UsageError
from medvidbench.server.lifecycle import ON_BOARD
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import item_results
from medvidbench.server.services.evaluations import current_evaluation
from medvidbench.server.services.item_results import StoredItem
from medvidbench.server.services.submission_reads import get_submission
from medvidbench.server.store.models import TestSet, User

PER_PAGE = 50
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
ATTRIBUTION_FILES = ("ATTRIBUTION.txt", "ATTRIBUTION.md")
ATTRIBUTION_BYTES = 256 * 1024
# Buckets of an item's first metric, on 0-1 (an IoU; a percent metric's 0-100 is scaled to
# them, :func:`_native`): label -> [low, high).
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
    profile: str = ""
    kept: bool = True  # False: scored before per-item results were kept (re-score to see them)


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
    whether the answer could be read: the results stored when it was scored, under the board's
    profile (never recomputed here).

    Raises:
        NotFoundError: for an unknown or unscored submission, or a benchmark whose labels are
            hidden (its per-item results are never shown).
        UsageError: for an unknown task or bucket.
    """
    sub = get_submission(runtime, submission_id, viewer)
    with runtime.sessions() as session:
        test_set = session.scalar(select(TestSet).where(TestSet.id == sub.benchmark_id))
        assert test_set is not None
        definition = runtime.definition(test_set.slug)
        if definition.labels != "public":
            raise NotFoundError(f"{definition.title} keeps its labels hidden: no per-item results")
        if sub.status not in ON_BOARD:
            raise NotFoundError(f"submission {submission_id} is not scored")
        if bucket and bucket not in BUCKETS:
            raise UsageError(f"bucket must be one of {', '.join(BUCKETS)}")
        evaluation = current_evaluation(session, sub.id, definition)
        view = ItemPage(
            sub.id, sub.model_name, definition.slug, [], "", "", bucket, failed_only, 1, 1, 0
        )
        view.profile = definition.default_profile
        if evaluation is None or not item_results.kept(session, evaluation.id):
            view.kept = False
            return view
        present = item_results.tasks_of(session, evaluation.id)
        view.tasks = [t.name for t in definition.tasks if t.name in present]
        if task and task not in view.tasks:
            raise UsageError(f"task must be one of {', '.join(view.tasks)}")
        view.task = task or view.tasks[0]
        metric = definition.metrics_by_key[item_results.first_metric(definition, view.task)]
        view.metric = metric.column
        view.matched, found = item_results.page_of(
            session,
            evaluation.id,
            view.task,
            _native(metric, BUCKETS[bucket]) if bucket else None,
            failed_only,
            (max(1, page) - 1) * PER_PAGE,
            PER_PAGE,
        )
    view.pages = max(1, -(-view.matched // PER_PAGE))
    view.page = max(1, page)
    if view.page > view.pages:  # past the end: show the last page
        return item_page(runtime, submission_id, viewer, view.task, bucket, failed_only, view.pages)
    gt = runtime.ground_truth(test_set.gt_sha256, test_set.slug)
    folder = image_folder(runtime, definition.slug)
    view.rows = [_row(definition, gt.samples[i.sample_index], i, folder) for i in found]
    return view


def _native(metric: Any, bucket: tuple[float, float]) -> tuple[float, float]:
    """A 0-1 bucket in the metric's own scale (a percent metric's 0-100)."""
    low, high = metric.bounds
    return low + bucket[0] * (high - low), low + bucket[1] * (high - low)


def _row(definition: Any, item: Any, stored: StoredItem, folder: Path | None) -> ItemRow:
    return ItemRow(
        key=item.sample_id,
        answer=stored.answer,
        value=stored.value,
        values=stored.values,
        parsed=stored.parsed,
        note=stored.note,
        drawing=_drawing(definition, item, stored.result(item.dataset), folder),
    )


def _drawing(definition: Any, item: Any, result: Any, folder: Path | None) -> dict[str, Any] | None:
    draw = definition.presentation.item_drawing
    if draw is None:
        return None
    drawing: dict[str, Any] | None = draw(item, result)
    if drawing is not None:
        drawing["image_url"] = (
            f"/b/{definition.slug}/item-image?key={quote(item.sample_id, safe='')}"
            if folder is not None and drawing.get("image")
            else None
        )
    return drawing


def image_folder(runtime: Runtime, slug: str) -> Path | None:
    """The operator's folder of a benchmark's test images (None when not configured)."""
    folder = runtime.settings.image_dirs.get(slug)
    return folder.resolve() if folder is not None and folder.is_dir() else None


def item_image(runtime: Runtime, slug: str, key: str) -> tuple[Path, str]:
    """The target image of a public-label benchmark's test item, and its media type.

    The path comes from the operator's test set, never from the request (which only names the
    item), and must stay inside the configured folder.

    Raises:
        NotFoundError: no folder, hidden labels, unknown item, unknown target image, or a path
            that is missing, not an image, or outside the folder.
    """
    definition = runtime.definition(slug)
    folder = image_folder(runtime, definition.slug)
    draw = definition.presentation.item_drawing
    if folder is None or definition.labels != "public" or draw is None:
        raise NotFoundError("no images are served for this benchmark")
    from medvidbench.server.services.test_sets import current_benchmark

    test_set = current_benchmark(runtime, definition.slug)
    gt = runtime.ground_truth(test_set.gt_sha256, test_set.slug)
    item = next((s for s in gt.samples if s.sample_id == key), None)
    drawing = draw(item, None) if item is not None else None
    relative = (drawing or {}).get("image")
    if not relative:
        raise NotFoundError(f"no target image for item {key[:80]!r}")
    path = (folder / relative).resolve()
    kind = IMAGE_TYPES.get(path.suffix.lower())
    if not path.is_relative_to(folder) or kind is None or not path.is_file():
        raise NotFoundError(f"no target image for item {key[:80]!r}")
    return path, kind


def attribution(runtime: Runtime, slug: str) -> str | None:
    """The images' attribution list the operator put in the image folder, if any."""
    folder = image_folder(runtime, slug)
    if folder is None:
        return None
    for name in ATTRIBUTION_FILES:
        # resolved, so that a symlink cannot lead out of the folder (to any file we may read)
        path = (folder / name).resolve()
        if path.is_relative_to(folder) and path.is_file():
            with path.open("rb") as fh:
                return fh.read(ATTRIBUTION_BYTES).decode("utf-8", errors="replace")
    return None
