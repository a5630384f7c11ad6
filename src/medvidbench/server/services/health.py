"""Readiness: can this process do its work now (the database reachable and at this code's
migration, the job queue reachable)? Each part answers ``ok`` or what is wrong with it; the
details of an error go to the log, never to the (public) answer."""

from __future__ import annotations

import logging

from medvidbench.core.errors import NoQueueError, NotMigratedError, QueueUnavailableError
from medvidbench.server.outages import describe, is_database_outage
from medvidbench.server.runtime import Runtime

log = logging.getLogger("medvidbench.server.health")


def _database(runtime: Runtime) -> str:
    try:
        runtime.check_database()
    except NotMigratedError as exc:
        where = "no schema" if exc.current is None else f"at revision {exc.current}"
        return f"{where}, needs {exc.head}: run 'medvidbench db upgrade'"
    except Exception as exc:
        if not is_database_outage(exc):
            raise
        log.warning("readiness: the database is unreachable (%s)", describe(exc))
        return "unreachable"
    return "ok"


def _queue(runtime: Runtime) -> str:
    try:
        runtime.queue.check()
    except QueueUnavailableError as exc:
        log.warning("readiness: %s", exc.message)
        return "unreachable"
    except NoQueueError:
        return "none: this process has no job queue"
    return "ok"


def readiness(runtime: Runtime) -> dict[str, str]:
    """Each part this process needs (``database``, ``queue``) and its state (``ok`` or what
    is wrong)."""
    return {"database": _database(runtime), "queue": _queue(runtime)}
