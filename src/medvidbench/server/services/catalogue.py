"""Which benchmarks this server hosts, and each one's current test set."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from medvidbench.core.benchmark import Benchmark as Definition
from medvidbench.server.runtime import Runtime
from medvidbench.server.store.models import Benchmark


@dataclass(frozen=True, slots=True)
class Hosted:
    """A hosted benchmark: its definition and its current test set (None until one is loaded)."""

    definition: Definition
    test_set: Benchmark | None

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
            for b in session.scalars(
                select(Benchmark).where(Benchmark.is_current).order_by(Benchmark.id)
            )
        }
    return [Hosted(runtime.definition(slug), current.get(slug)) for slug in runtime.hosted]
