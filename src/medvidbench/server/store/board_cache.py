"""Ranked boards, cached per process until their benchmark changes.

Every change that can alter a board (an evaluation stored, a submission's status, an entry
added, promoted, removed or deleted) bumps its benchmark's ``generation`` in the same
transaction. A process keeps each board's ranked rows with the generation they were computed
at and reuses them while the stored generation is the same: one indexed read per request
instead of ranking every row again. Several web processes stay consistent, since each compares
against the database.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from medvidbench.server.store.models import Submission, TestSet

T = TypeVar("T")


def bump(session: Session, benchmark_id: int) -> None:
    """Mark every board of a benchmark as changed (in the caller's transaction)."""
    session.execute(
        update(TestSet).where(TestSet.id == benchmark_id).values(generation=TestSet.generation + 1)
    )


def bump_for_submission(session: Session, submission_id: int) -> None:
    """Mark the boards of the submission's benchmark as changed."""
    benchmark_id = session.scalar(
        select(Submission.benchmark_id).where(Submission.id == submission_id)
    )
    if benchmark_id is not None:
        bump(session, benchmark_id)


def generation(session: Session, benchmark_id: int) -> int:
    return int(session.scalar(select(TestSet.generation).where(TestSet.id == benchmark_id)) or 0)


class BoardCache:
    """Values computed from a board, reused while its benchmark's generation is unchanged."""

    def __init__(self) -> None:
        self._values: dict[Any, tuple[int, Any]] = {}
        self._lock = threading.Lock()
        self._computing: dict[Any, threading.Lock] = {}

    def get(self, key: Any, current: int, compute: Callable[[], T]) -> T:
        """The value for ``key`` at generation ``current``; computed once however many
        requests ask for it at the same time."""
        with self._lock:
            held = self._values.get(key)
            if held is not None and held[0] == current:
                return held[1]  # type: ignore[no-any-return]
            computing = self._computing.setdefault(key, threading.Lock())
        with computing:
            with self._lock:
                held = self._values.get(key)
            if held is not None and held[0] == current:
                return held[1]  # type: ignore[no-any-return]  # another request just made it
            value = compute()
            with self._lock:
                self._values[key] = (current, value)
            return value
