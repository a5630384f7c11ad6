"""The app for production ASGI servers: ``uvicorn --factory medvidbench.server.web.asgi:app``.

Settings come from the environment (``MEDVIDBENCH_*``). Jobs go to the configured queue and are
run by ``medvidbench worker`` processes. Run ``medvidbench db upgrade`` once before starting: a
database not at this code's migration stops the factory with that message.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI

from medvidbench.core.config import load_settings
from medvidbench.core.errors import NotMigratedError, UsageError
from medvidbench.server.jobs import attach_queue
from medvidbench.server.outages import describe, is_database_outage
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.housekeeping import sweep_scratch
from medvidbench.server.web.app import create_app

log = logging.getLogger("medvidbench.server.web")


def app() -> FastAPI:
    """A web process (no job consumer of its own), configured from the environment."""
    import logging

    from medvidbench.core.blas import one_blas_thread

    one_blas_thread()  # before numpy is first imported (scoring in-process, warm-up)

    from medvidbench.server.logs import configure_logging
    from medvidbench.server.metrics import prepare_multiprocess_dir

    prepare_multiprocess_dir()  # uvicorn --workers N: every process adds to the same folder
    settings = load_settings()
    if settings.log_format == "json":  # otherwise uvicorn's own logging, as configured
        configure_logging(settings, level=logging.WARNING)
    if settings.secret_key is None:
        raise UsageError("set MEDVIDBENCH_SECRET_KEY (32+ characters) for a production server")
    runtime = Runtime(settings)
    try:
        runtime.check_database()  # not at this code's migration: refuse to start (the message)
    except NotMigratedError:
        raise
    except Exception as exc:
        if not is_database_outage(exc):
            raise
        # unreachable for now: start, and answer /api/v1/health/ready with 503 until it is back
        log.warning("the database is unreachable at start (%s)", describe(exc))
    # the benchmark plug-ins load now (a broken one stops the start), not in a first request
    # on the event loop
    runtime.hosted  # noqa: B018
    sweep_scratch(runtime)  # runs no reaper: what a crash of it left under incoming/
    attach_queue(runtime)
    return create_app(runtime)
