"""Reading submissions as their viewer may: one (hidden from whoever may not see it), a
user's list, and which benchmark a submission was made to."""

from __future__ import annotations

from sqlalchemy import select

from medvidbench.core.errors import NotFoundError
from medvidbench.server.lifecycle import PRIVATE, Status
from medvidbench.server.roles import STAFF
from medvidbench.server.runtime import Runtime
from medvidbench.server.store.models import Submission, TestSet, User


def get_submission(runtime: Runtime, submission_id: int, viewer: User | None = None) -> Submission:
    """A submission; everyone may see scored ones, only the owner and staff the others."""
    with runtime.sessions() as session:
        sub = session.get(Submission, submission_id)
        if sub is None or sub.status == Status.DELETED:
            raise NotFoundError(f"no submission {submission_id}")
        staff = viewer is not None and viewer.role in STAFF
        private = sub.status in PRIVATE or sub.visibility != "public"
        if not staff and private and (viewer is None or viewer.id != sub.user_id):
            raise NotFoundError(f"no submission {submission_id}")
        return sub


def list_submissions(
    runtime: Runtime, user: User, everyone: bool = False, limit: int = 100
) -> list[Submission]:
    with runtime.sessions() as session:
        query = select(Submission).where(Submission.status != Status.DELETED)
        if not (everyone and user.role in STAFF):
            query = query.where(Submission.user_id == user.id)
        return list(session.scalars(query.order_by(Submission.id.desc()).limit(limit)))


def benchmark_slugs(runtime: Runtime) -> dict[int, str]:
    """Every test set's benchmark slug, by the test set's id (what a submission names)."""
    with runtime.sessions() as session:
        return {int(i): str(s) for i, s in session.execute(select(TestSet.id, TestSet.slug))}


def benchmark_of(runtime: Runtime, submission_id: int) -> str:
    """The slug of the benchmark a submission was made to."""
    with runtime.sessions() as session:
        slug = session.scalar(
            select(TestSet.slug)
            .join(Submission, Submission.benchmark_id == TestSet.id)
            .where(Submission.id == submission_id)
        )
    if slug is None:
        raise NotFoundError(f"no submission {submission_id}")
    return str(slug)
