"""Clearing what nothing else clears: expired browser sessions, scratch files left by a crash.

A session is checked for expiry when it is read, so an expired row that is never read again
would stay for ever; an upload is written under the data folder's ``incoming/`` and removed when
it is done with, unless the process died in between. Workers' reapers (and ``serve``'s) run
:func:`tidy` every minute, each on its own machine's data folder; a web process started from
``asgi:app`` runs no reaper and sweeps its own ``incoming/`` when it starts.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete

from medvidbench.server.runtime import Runtime
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import WebSession

log = logging.getLogger("medvidbench.server.housekeeping")

# An upload in progress writes its scratch file chunk by chunk (each write moves its mtime), and
# a finished one is removed within seconds; a file untouched for a day was left by a crash.
SCRATCH_MAX_AGE_SECONDS = 24 * 3600


@dataclass(frozen=True, slots=True)
class Tidied:
    """What one :func:`tidy` removed."""

    sessions: int
    scratch_files: int


def delete_expired_sessions(runtime: Runtime, now: datetime | None = None) -> int:
    """Delete browser sessions that have expired; returns how many."""
    with transaction(runtime.sessions) as session:
        result = session.execute(
            delete(WebSession).where(WebSession.expires_at <= (now or datetime.now(UTC)))
        )
        return int(result.rowcount)  # type: ignore[attr-defined]


def sweep_scratch(runtime: Runtime, max_age_seconds: float = SCRATCH_MAX_AGE_SECONDS) -> int:
    """Remove files of this machine's ``incoming/`` not written to for ``max_age_seconds``
    (never one an upload in progress is still writing); returns how many."""
    folder = runtime.data_dir / "incoming"
    if not folder.is_dir():
        return 0
    cutoff = time.time() - max_age_seconds
    removed = 0
    for path in folder.iterdir():
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:  # removed meanwhile by its own upload or another sweep
            continue
    return removed


def tidy(runtime: Runtime) -> Tidied:
    """Delete expired sessions and sweep crash leftovers from ``incoming/``; logs one line when
    it removed anything."""
    done = Tidied(delete_expired_sessions(runtime), sweep_scratch(runtime))
    if done.sessions or done.scratch_files:
        log.info(
            "housekeeping: deleted %d expired session(s), %d scratch file(s) left by a crash",
            done.sessions,
            done.scratch_files,
        )
    return done
