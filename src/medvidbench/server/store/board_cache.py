"""Ranked boards, cached per process until their benchmark changes.

Every change that can alter a board (an evaluation stored, a submission's status, an entry
added, promoted, removed or deleted) bumps its benchmark's ``generation`` in the same
transaction. A process keeps each board's ranked rows with the generation they were computed
at and reuses them while the stored generation is the same: one indexed read per request
instead of ranking every row again. Several web processes stay consistent, since each compares
against the database.

The page every visitor sees (:class:`RecentVersions`) trusts its last read of that generation
for a second: a change made by this process shows at once, one made by another process (a
worker elsewhere) at most about twice ``MEDVIDBENCH_BOARD_RECHECK_SECONDS`` later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import event, select, update
from sqlalchemy.orm import Session

from medvidbench.server.store.models import Submission, TestSet

T = TypeVar("T")


def bump(session: Session, benchmark_id: int) -> None:
    """Mark every board of a benchmark as changed (in the caller's transaction)."""
    session.execute(
        update(TestSet).where(TestSet.id == benchmark_id).values(generation=TestSet.generation + 1)
    )
    session.info["boards_changed"] = True  # counted when the transaction commits


_changes_here = 0  # commits of this process that changed a board


@event.listens_for(Session, "after_commit")
def _committed_here(session: Session) -> None:
    global _changes_here
    if session.info.pop("boards_changed", False):
        _changes_here += 1  # an int's += under the GIL; a lost count costs only a re-read


@event.listens_for(Session, "after_rollback")
def _rolled_back(session: Session) -> None:
    session.info.pop("boards_changed", None)  # nothing changed


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

    def peek(self, key: Any, current: int) -> Any | None:
        """The value for ``key`` if it was computed at generation ``current``, else None
        (never computes, never waits for a computation)."""
        with self._lock:
            held = self._values.get(key)
        return held[1] if held is not None and held[0] == current else None

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


class RecentVersions:
    """Each key's version as last read, trusted for ``seconds`` unless this process has
    committed a change to a board since (then read again at once).

    Lets the page every visitor sees answer from memory, without a database read per request.
    When the window has passed, one request reads the version again while the others go on
    with the one held (for another ``seconds`` at most): fifty clients at once make one read,
    not fifty. A change committed by another process is therefore seen at most about twice
    ``seconds`` late. 0: every request reads.
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock  # tests pass their own, so a slow machine cannot pass a window
        self._held: dict[Any, tuple[float, int, Any]] = {}  # key: (read at, changes, version)
        self._reading: set[Any] = set()  # keys a request has claimed to read again

    def recent(self, key: Any) -> Any | None:
        """The version held for ``key`` if it may still be served, else None: then the caller
        must read it (through :meth:`get`), and other callers are given the held one until
        that read is done or the window has passed twice. Reads no database."""
        age = self._age(key)
        if age is None:
            return None
        if age < self.seconds or (key in self._reading and age < 2 * self.seconds):
            return self._held[key][2]  # in the window, or another request is reading it again
        self._reading.add(key)  # this caller reads it (:meth:`get` clears the claim)
        return None

    def get(self, key: Any, read: Callable[[], T]) -> T:
        """The version of ``key``: the one held if within the window, else ``read()``'s
        (kept)."""
        age = self._age(key)
        if age is not None and age < self.seconds:
            self._reading.discard(key)  # a claim made meanwhile has nothing left to read
            return self._held[key][2]  # type: ignore[no-any-return]
        # taken before the read: a commit during it leaves what is stored out of date, so
        # the next request reads again
        changes, at = _changes_here, self._clock()
        self._reading.add(key)  # meanwhile the others are given the version held
        try:
            version = read()
            latest = self._held.get(key)
            if latest is None or latest[0] <= at:  # never replaced by an older read
                self._held[key] = (at, changes, version)
        finally:
            self._reading.discard(key)  # after the version is stored, never before
        return version

    def _age(self, key: Any) -> float | None:
        """Seconds since the version held for ``key`` was read; None when nothing is held or
        this process has committed a change to a board since."""
        held = self._held.get(key)
        if held is None or held[1] != _changes_here:
            return None
        return self._clock() - held[0]
