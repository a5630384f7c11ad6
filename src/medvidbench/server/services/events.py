"""A submission's log: its steps with their times, as its page shows them.

Each step writes its event in the transaction that makes the step (received and validated in
the one that stores the submission, scored in the one that stores the evaluation), so the log
never claims what did not happen. Messages describe the file and the work, never the ground
truth.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from medvidbench.server.runtime import Runtime
from medvidbench.server.store.models import SubmissionEvent

# Kinds whose message may hold an internal error text: shown to the submitter and staff only.
PRIVATE_KINDS = ("error", "failed")


def record(session: Any, submission_id: int, kind: str, message: str = "") -> None:
    """Append an event (in the caller's transaction)."""
    session.add(SubmissionEvent(submission_id=submission_id, kind=kind, message=message[:1000]))


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
