"""The test sets a server holds: which one of a benchmark is current."""

from __future__ import annotations

from sqlalchemy import select

from medvidbench.core.errors import NotFoundError
from medvidbench.server.runtime import Runtime
from medvidbench.server.store.models import TestSet


def current_benchmark(runtime: Runtime, slug: str | None = None) -> TestSet:
    """The current test set of a hosted benchmark (None: the default benchmark)."""
    slug = runtime.definition(slug).slug
    with runtime.sessions() as session:
        bench = session.scalar(
            select(TestSet)
            .where(TestSet.is_current, TestSet.slug == slug)
            .order_by(TestSet.id.desc())
        )
    if bench is None:
        raise NotFoundError(
            f"no test set of {slug!r} is loaded; run "
            f"'medvidbench benchmarks load GT.json --benchmark {slug}'"
        )
    return bench
