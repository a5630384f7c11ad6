"""Which benchmarks this server hosts and their test sets: loading a test set, the first run's
demo sets, and the published results seeded on an empty official board."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from medvidbench.core.benchmark import Benchmark
from medvidbench.core.errors import ConflictError, UsageError
from medvidbench.core.formats import read_bytes
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.audit import audit
from medvidbench.server.services.board_reads import KINDS, find_board
from medvidbench.server.services.entries import add_reported
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.store import board_cache
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import Board, Entry, TestSet, User


@dataclass(frozen=True, slots=True)
class Hosted:
    """A hosted benchmark: its definition and its current test set (None until one is loaded)."""

    definition: Benchmark
    test_set: TestSet | None

    @property
    def slug(self) -> str:
        return self.definition.slug

    def summary(self) -> dict[str, Any]:
        """What the API and the front page say about it (never ground truth): the benchmark,
        and its current test set in the keys earlier versions gave (null when none)."""
        d, t = self.definition, self.test_set
        return {
            "slug": d.slug,
            "title": d.title,
            "version": d.version,
            "scorer_version": d.scorer_version,
            "labels": d.labels,
            "url": f"/b/{d.slug}/",
            "api": f"/api/v1/benchmarks/{d.slug}",
            "id": t.id if t else None,
            "name": t.name if t else None,
            "sha256": t.gt_sha256 if t else None,
            "samples": t.sample_count if t else None,
            "tasks": t.task_counts if t else None,
            "demo": t.is_demo if t else None,
        }


def hosted(runtime: Runtime) -> list[Hosted]:
    """Every hosted benchmark in the configured order, with its current test set."""
    with runtime.sessions() as session:
        current = {
            b.slug: b
            for b in session.scalars(select(TestSet).where(TestSet.is_current).order_by(TestSet.id))
        }
    return [Hosted(runtime.definition(slug), current.get(slug)) for slug in runtime.hosted]


def load_benchmark(
    runtime: Runtime,
    path: str | Path,
    name: str = "",
    demo: bool = False,
    actor: User | None = None,
    slug: str | None = None,
) -> TestSet:
    """Validate a ground-truth file of benchmark ``slug`` (None: the default one), keep a copy,
    and make it that benchmark's current test set (other benchmarks' are left alone)."""
    definition = runtime.definition(slug)
    data = read_bytes(path, runtime.settings.max_submission_bytes)
    gt = definition.load_ground_truth(data)
    if not runtime.files.exists("test-set", gt.sha256):  # content-addressed: stored once
        runtime.files.write("test-set", gt.sha256, data)
    with transaction(runtime.sessions) as session:
        bench = session.scalar(select(TestSet).where(TestSet.gt_sha256 == gt.sha256))
        if bench is None:
            bench = TestSet(
                slug=definition.slug,
                name=(name or definition.title)[:80],
                gt_sha256=gt.sha256,
                sample_count=len(gt),
                task_counts=_task_counts(definition, gt),
                is_demo=demo,
            )
            session.add(bench)
            session.flush()
            for kind in KINDS:
                session.add(Board(benchmark_id=bench.id, kind=kind))
        elif bench.slug != definition.slug:
            raise ConflictError(
                f"this file is already loaded as a test set of {bench.slug!r}, "
                f"not of {definition.slug!r}"
            )
        for other in session.scalars(
            select(TestSet).where(TestSet.id != bench.id, TestSet.slug == bench.slug)
        ):
            other.is_current = False
        bench.is_current = True
        session.flush()
        board_cache.bump(session, bench.id)
        audit(
            session,
            actor,
            "benchmark.load",
            f"benchmark:{bench.id}",
            sha256=gt.sha256,
            samples=len(gt),
            demo=demo,
        )
    return bench


def _task_counts(definition: Any, gt: Any) -> dict[str, int]:
    """Items per task, in the definition's task order."""
    counts: dict[str, int] = {}
    for item in gt.samples:
        counts[item.task] = counts.get(item.task, 0) + 1
    return {t.name: counts[t.name] for t in definition.tasks if t.name in counts}


def seed_published(runtime: Runtime, slug: str | None = None) -> int:
    """Put the benchmark's published results on an empty official board, as reported entries."""
    definition = runtime.definition(slug)
    bench = current_benchmark(runtime, definition.slug)
    with runtime.sessions() as session:
        board = find_board(session, bench.id, "official")
        if session.scalar(select(Entry.id).where(Entry.board_id == board.id).limit(1)):
            return 0
    added = 0
    for item in definition.presentation.reported_results():
        add_reported(
            runtime,
            None,
            item["model"],
            item["team"],
            item["metrics"],
            source=item["source"],
            baseline=bool(item.get("baseline")),
            date=item.get("date"),
            benchmark=definition.slug,
        )
        added += 1
    return added


def seed_test_sets(runtime: Runtime, ground_truth: Path | None = None) -> list[TestSet]:
    """First run: give every hosted benchmark a current test set (``ground_truth`` for the
    default benchmark; else its synthetic demo set, written with example prediction files to
    ``DATA/demo/<slug>/``), and seed each empty official board with the published results.

    Returns the current test set of every hosted benchmark that has one. A benchmark without
    a test set or a generator is skipped (its pages say no test set is loaded); the default
    benchmark must have one.
    """
    loaded = []
    for slug in runtime.hosted:
        if ground_truth is not None and slug == runtime.default_slug:
            load_benchmark(runtime, ground_truth, slug=slug)
        with runtime.sessions() as session:
            found = session.scalar(select(TestSet).where(TestSet.is_current, TestSet.slug == slug))
        if found is None:
            definition = runtime.definition(slug)
            if definition.demo is None:
                if slug == runtime.default_slug:
                    raise UsageError(
                        f"benchmark {slug!r} has no synthetic demo set; "
                        "give its test set with --ground-truth"
                    )
                continue
            files = definition.demo.synthesise(runtime.data_dir / "demo" / slug, None, 0)
            found = load_benchmark(
                runtime,
                files["ground_truth"],
                name=f"{definition.title} (demo)",
                demo=True,
                slug=slug,
            )
        seed_published(runtime, slug)
        loaded.append(found)
    return loaded
