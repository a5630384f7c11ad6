"""The app for production ASGI servers: ``uvicorn --factory medvidbench.server.web.asgi:app``.

Settings come from the environment (``MEDVIDBENCH_*``). Jobs go to the configured queue and are
run by ``medvidbench worker`` processes; run ``medvidbench db upgrade`` once before starting.
"""

from __future__ import annotations

from fastapi import FastAPI

from medvidbench.core.config import load_settings
from medvidbench.core.errors import UsageError
from medvidbench.server.jobs import attach_queue
from medvidbench.server.runtime import Runtime
from medvidbench.server.web.app import create_app


def app() -> FastAPI:
    """A web process (no job consumer of its own), configured from the environment."""
    import logging

    from medvidbench.server.logs import configure_logging
    from medvidbench.server.metrics import prepare_multiprocess_dir

    prepare_multiprocess_dir()  # uvicorn --workers N: every process adds to the same folder
    settings = load_settings()
    if settings.log_format == "json":  # otherwise uvicorn's own logging, as configured
        configure_logging(settings, level=logging.WARNING)
    if settings.secret_key is None:
        raise UsageError("set MEDVIDBENCH_SECRET_KEY (32+ characters) for a production server")
    runtime = Runtime(settings)
    attach_queue(runtime)
    return create_app(runtime)
