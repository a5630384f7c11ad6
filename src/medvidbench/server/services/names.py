"""Model names on a benchmark's boards: which are taken, and by what.

A name is held against everyone only by what everyone can see: a public submission that still
counts (one an administrator hid included, as it may come back) or a result reported on a board.
A private run holds no name against anyone: if its name said "taken", anybody could confirm that
the run exists. Its owner learns of a clash when publishing it, which is then refused.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from medvidbench.server.lifecycle import NOT_COUNTED
from medvidbench.server.store.models import Board, Entry, Submission


def held_publicly(session: Any, benchmark_id: int, key: str, but: int | None = None) -> bool:
    """Whether the model name ``key`` (see ``model_key``) is held on a benchmark by a public
    submission (other than submission ``but``) or a reported result."""
    public = select(Submission.id).where(
        Submission.benchmark_id == benchmark_id,
        Submission.model_key == key,
        Submission.status.not_in(NOT_COUNTED),
        Submission.visibility == "public",
    )
    if but is not None:
        public = public.where(Submission.id != but)
    if session.scalar(public.limit(1)) is not None:
        return True
    # a submission's own entries carry its name and follow its visibility: only reported ones
    reported = (
        select(Entry.id)
        .join(Board)
        .where(
            Board.benchmark_id == benchmark_id,
            Entry.model_key == key,
            Entry.submission_id.is_(None),
        )
    )
    return session.scalar(reported.limit(1)) is not None
