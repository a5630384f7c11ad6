"""The submission lifecycle: its states, the steps between them, and which states count.

An upload is checked as it is received (no state of its own), then
``queued -> scoring -> scored -> judging -> complete``, or ``rejected`` (the file is invalid:
nothing is stored but the reason), ``failed`` (our fault, after retries; the reason is
shown; a submission whose judging failed leaves the boards until an administrator re-judges it)
or ``deleted``. Every module that names a state uses :class:`Status`; the values are the
strings stored in the database.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """A submission's state."""

    QUEUED = "queued"
    SCORING = "scoring"
    SCORED = "scored"
    JUDGING = "judging"
    COMPLETE = "complete"
    REJECTED = "rejected"
    FAILED = "failed"
    DELETED = "deleted"


# What a submission's page shows as its way through the lifecycle, in order.
TIMELINE = (Status.QUEUED, Status.SCORING, Status.SCORED, Status.JUDGING, Status.COMPLETE)
# Nothing more will happen to a submission in these states (scored, too, without a judge).
FINAL = (Status.COMPLETE, Status.REJECTED, Status.FAILED, Status.DELETED)
# These neither count against quotas nor hold their model name or file.
NOT_COUNTED = (Status.REJECTED, Status.FAILED, Status.DELETED)
# Scored rules are final and the row is on the board; judging may still come.
ON_BOARD = (Status.SCORED, Status.JUDGING, Status.COMPLETE)
# Only the submitter and staff may see a submission in these states.
PRIVATE = (Status.REJECTED, Status.FAILED, Status.QUEUED, Status.SCORING)
# Background step -> (state it waits in, state while it runs, state when done).
STEPS: dict[str, tuple[Status, Status, Status]] = {
    "score": (Status.QUEUED, Status.SCORING, Status.SCORED),
    "judge": (Status.SCORED, Status.JUDGING, Status.COMPLETE),
}
# The partial indexes' condition: submissions that hold their model name and file.
ACTIVE_SQL = "status NOT IN ({})".format(", ".join(f"'{s.value}'" for s in NOT_COUNTED))


def timeline(status: str, judged: bool) -> dict[str, Any]:
    """The steps a submission's page shows, and its state as the page names it.

    A benchmark without judged metrics has no judging step to show or wait for, so its scored
    submissions read "scored" (even if a judge configured for other benchmarks passed by).
    """
    steps = TIMELINE if judged else TIMELINE[: TIMELINE.index(Status.SCORED) + 1]
    shown = status if judged or status not in ON_BOARD else Status.SCORED.value
    reached = steps.index(Status(shown)) if shown in steps else -1
    return {
        "shown_status": shown,
        "timeline": [{"state": s.value, "reached": i <= reached} for i, s in enumerate(steps)],
    }
