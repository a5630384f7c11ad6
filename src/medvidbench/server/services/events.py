"""A submission's log: its steps with their times, as its page shows them.

Each step writes its event in the transaction that makes the step (received and validated in
the one that stores the submission, scored in the one that stores the evaluation), so the log
never claims what did not happen. Messages describe the file and the work, never the ground
truth.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from sqlalchemy import select

from medvidbench.core.errors import ProblemList
from medvidbench.server.runtime import Runtime
from medvidbench.server.store.models import SubmissionEvent


class Kind(StrEnum):
    """Every kind of event a submission's log holds. The value is what is stored, and what
    older rows keep: a value never changes (tests/server/test_event_kinds.py holds them), and
    every writer and reader names a kind through this class, so that one cannot drift from
    the other (the private-run count replays visibility and failure events)."""

    RECEIVED = "received"
    VALIDATED = "validated"
    REJECTED = "rejected"
    WARNING = "warning"
    WAITING = "waiting"  # the job queue was down at upload
    SCORE_STARTED = "score started"
    JUDGE_STARTED = "judge started"
    SCORED = "scored"
    JUDGED = "judged"
    ERROR = "error"  # a step failed and will be tried again
    FAILED = "failed"  # a step failed for good
    JUDGE_FAILED = "judge failed"  # the judge is down; judging is tried again later
    HIDDEN = "hidden"  # an administrator took it off the boards
    SHOWN = "shown"  # and put it back
    PUBLISHED = "published"
    UNPUBLISHED = "unpublished"
    WITHDRAWN = "withdrawn"
    REJUDGE = "rejudge"  # an administrator put a failed judging back in the queue
    RESCORE_REQUESTED = "rescore-requested"
    RESCORE_STARTED = "rescore-started"
    RESCORED = "rescored"
    RESCORE_FAILED = "rescore-failed"


# Kinds whose message may hold an internal error text, or quote the submitted file (a
# validation warning names its records): shown to the submitter and staff only.
PRIVATE_KINDS = (Kind.ERROR, Kind.FAILED, Kind.WARNING)


def record(session: Any, submission_id: int, kind: Kind, message: str = "") -> None:
    """Append an event (in the caller's transaction)."""
    session.add(SubmissionEvent(submission_id=submission_id, kind=kind, message=message[:1000]))


def record_warnings(session: Any, submission_id: int, warnings: ProblemList) -> None:
    """One ``warning`` event per warning validation kept, and one for those it only counted,
    so that the page, the API and the CLI give every text (the log alone gave a count)."""
    for problem in warnings.items:
        record(session, submission_id, Kind.WARNING, problem.message)
    if warnings.omitted():
        record(
            session,
            submission_id,
            Kind.WARNING,
            f"{warnings.omitted():,} more warning(s) of the same kinds were counted, not kept",
        )


def warnings(runtime: Runtime, submission_id: int) -> list[str]:
    """The texts of a submission's validation warnings, in the order they were found."""
    with runtime.sessions() as session:
        return list(
            session.scalars(
                select(SubmissionEvent.message)
                .where(
                    SubmissionEvent.submission_id == submission_id,
                    SubmissionEvent.kind == Kind.WARNING,
                )
                .order_by(SubmissionEvent.id)
            )
        )


def log(runtime: Runtime, submission_id: int, full: bool) -> list[dict[str, Any]]:
    """The events, oldest first; ``full`` (the submitter, staff) includes error texts."""
    with runtime.sessions() as session:
        rows = session.scalars(
            select(SubmissionEvent)
            .where(SubmissionEvent.submission_id == submission_id)
            .order_by(SubmissionEvent.at, SubmissionEvent.id)
        ).all()
        return [
            {
                "at": e.at.isoformat(timespec="seconds"),
                "kind": e.kind,
                "message": e.message
                if full or e.kind not in PRIVATE_KINDS
                else "details are shown to the submitter",
            }
            for e in rows
        ]
