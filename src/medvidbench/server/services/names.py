"""Model names on a benchmark's boards: which are taken, and by what.

A name is held against everyone only by what everyone can see: a public submission that still
counts (one an administrator hid included, as it may come back) or a result reported on a board.
A private run holds no name against anyone: if its name said "taken", anybody could confirm that
the run exists. Its owner learns of a clash when publishing it, which is then refused.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_, select

from medvidbench.server.lifecycle import NOT_COUNTED
from medvidbench.server.store.models import Board, Entry, Submission


def _public(benchmark_id: int | None = None) -> Any:
    """The ids of public submissions that count (of one benchmark, when given)."""
    query = select(Submission.id).where(
        Submission.status.not_in(NOT_COUNTED), Submission.visibility == "public"
    )
    return query if benchmark_id is None else query.where(Submission.benchmark_id == benchmark_id)


def on_board(session: Any, board_id: int, key: str) -> bool:
    """Whether board ``board_id`` has a public entry named ``key``: a reported result, or the
    row of a public submission (a private run's row is nobody else's business)."""
    shown = or_(Entry.submission_id.is_(None), Entry.submission_id.in_(_public()))
    found = select(Entry.id).where(Entry.board_id == board_id, Entry.model_key == key, shown)
    return session.scalar(found.limit(1)) is not None


def held_publicly(session: Any, benchmark_id: int, key: str, but: int | None = None) -> bool:
    """Whether the model name ``key`` (see ``model_key``) is held on a benchmark by a public
    submission (other than submission ``but``) or a reported result."""
    public = _public(benchmark_id).where(Submission.model_key == key)
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
