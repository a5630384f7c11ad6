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


_CLUSTERS: dict[str, int] = {}  # test set sha256 -> its bootstrap clusters (content-addressed)


def cluster_count(runtime: Runtime, test_set: TestSet) -> int | None:
    """How many bootstrap clusters a test set's items fall into (the benchmark's rule: for
    MedVidBench its source recordings), None when its file is not stored here."""
    sha = test_set.gt_sha256
    if sha not in _CLUSTERS:
        try:
            gt = runtime.ground_truth(sha, test_set.slug)
        except NotFoundError:
            return None
        cluster_of = runtime.definition(test_set.slug).uncertainty.cluster_of
        _CLUSTERS[sha] = len({cluster_of(s) for s in gt.samples})
    return _CLUSTERS[sha]
