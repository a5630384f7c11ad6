"""Outages of the services a worker needs (the job queue, the database): back off, and say so
once per back-off instead of logging a traceback on every try.

A :class:`Backoff` is shared by every job thread of a process: the first thread that fails
starts (or lengthens) the pause and writes the one line; threads failing within the same pause
add nothing. The first success ends it, with one line saying the service is back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("medvidbench.server.jobs")


def describe(exc: BaseException) -> str:
    """An error in one line (the first line of its message, shortened)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def unusable_database(exc: BaseException) -> tuple[str, bool] | None:
    """Why a command cannot use its database, in one line, and whether trying again later can
    help: a URL SQLAlchemy cannot read (an unknown dialect among them), or a database that does
    not answer; None for any other error."""
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    text = str(exc)
    if isinstance(exc, NoSuchModuleError) or (
        isinstance(exc, ArgumentError) and text.startswith("Could not parse SQLAlchemy URL")
    ):
        return f"MEDVIDBENCH_DATABASE_URL cannot be used: {exc}", False
    if not is_database_outage(exc):
        return None
    said = describe(getattr(exc, "orig", None) or exc)
    if "unable to open database file" in text:  # SQLite: a folder that does not exist
        return f"the database file cannot be opened: {said}", False
    if "connection failed" in text and any(m in text for m in _REFUSED):
        return f"the database refused the connection: {said}", False  # the URL's to fix
    # the connection itself, not a statement the database refused (a missing column, a bug)
    if any(m in text for m in _UNREACHABLE):
        return f"the database cannot be reached: {said}", True
    return None


# What a connection that could not be made or was lost says (psycopg, SQLite's locking)
_UNREACHABLE = (
    "connection failed",
    "could not connect",
    "Connection refused",
    "timeout expired",
    "server closed the connection",
    "connection is closed",
    "the connection is lost",
    "terminating connection",
    "No route to host",
    "Name or service not known",
    "database is locked",
)
# ... and what a server that answered says of the URL's role, password or database
_REFUSED = ("does not exist", "password authentication failed", "no pg_hba.conf entry")


def is_queue_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the job queue (Redis, or the SQLite queue file) cannot be used."""
    import sqlite3

    try:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError
    except ImportError:  # pragma: no cover - redis is a server dependency
        return isinstance(exc, ConnectionError | TimeoutError | sqlite3.OperationalError)
    return isinstance(
        exc,
        RedisConnectionError | RedisTimeoutError | ConnectionError | sqlite3.OperationalError,
    )


def database_error() -> type[Exception]:
    """The base class of the errors the database driver raises (for the web's error handler,
    which names no database library itself)."""
    from sqlalchemy.exc import DBAPIError

    return DBAPIError


def is_database_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached (not a mistake in a query)."""
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

    if isinstance(exc, OperationalError | InterfaceError):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


@dataclass
class Backoff:
    """The pause before a service is tried again: ``first`` seconds, doubled after every
    failure, ``most`` at most; one warning per pause."""

    what: str
    first: float = 1.0
    most: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _delay: float = 0.0
    _until: float = 0.0
    _since: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def pause(self) -> float:
        """Seconds left before the service should be tried again (0: try now)."""
        return max(0.0, self._until - self.clock())

    def failed(self, exc: BaseException) -> None:
        """The service failed: start or lengthen the pause (once per pause, however many
        threads fail within it)."""
        with self._lock:
            now = self.clock()
            if now < self._until:
                return
            if not self._delay:
                self._since = now
            self._delay = min(self.most, self._delay * 2 or self.first)
            self._until = now + self._delay
            log.warning(
                "%s is unreachable (%s); trying again in %.0f s",
                self.what,
                describe(exc),
                self._delay,
            )

    def recovered(self) -> None:
        """The service answered: end the pause (one line, when there was one)."""
        if not self._delay:
            return
        with self._lock:
            if self._delay:
                log.warning(
                    "%s is reachable again (after %.0f s)", self.what, self.clock() - self._since
                )
            self._delay = self._until = 0.0


@dataclass
class Outages:
    """The back-offs of one process: the job queue and the database."""

    queue: Backoff = field(default_factory=lambda: Backoff("the job queue"))
    database: Backoff = field(default_factory=lambda: Backoff("the database"))

    def pause(self) -> float:
        return max(self.queue.pause(), self.database.pause())

    def failed(self, exc: BaseException) -> bool:
        """Count ``exc`` against the service it names; False when it names none (a bug, to
        be raised as usual)."""
        if is_database_outage(exc):
            self.database.failed(exc)
        elif is_queue_outage(exc):
            self.queue.failed(exc)
        else:
            return False
        return True
