"""What the metrics endpoint reads from the database at scrape time."""

from __future__ import annotations

from sqlalchemy import func, select

from medvidbench.server.lifecycle import Status
from medvidbench.server.runtime import Runtime
from medvidbench.server.store.models import Submission, TestSet


def submission_counts(runtime: Runtime) -> dict[tuple[str, str], int]:
    """How many submissions each benchmark has in each state, keyed by (slug, status): every
    state of every hosted benchmark, those with none too (a known 0 is not missing data)."""
    query = (
        select(TestSet.slug, Submission.status, func.count())
        .join(TestSet, Submission.benchmark_id == TestSet.id)
        .group_by(TestSet.slug, Submission.status)
    )
    counts = {(slug, str(status)): 0 for slug in runtime.hosted for status in Status}
    with runtime.sessions() as session:
        for slug, status, n in session.execute(query):
            counts[str(slug), str(status)] = int(n)
    return counts
