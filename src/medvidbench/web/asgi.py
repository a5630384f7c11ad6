"""The app for production ASGI servers: ``uvicorn --factory medvidbench.web.asgi:app``.

Settings come from the environment (``MEDVIDBENCH_*``). Jobs go to the configured queue and are
run by ``medvidbench worker`` processes; run ``medvidbench db upgrade`` once before starting.
"""

from __future__ import annotations

from fastapi import FastAPI

from medvidbench.config import load_settings
from medvidbench.errors import UsageError
from medvidbench.jobs import attach_queue
from medvidbench.runtime import Runtime
from medvidbench.web.app import create_app


def app() -> FastAPI:
    """A web process (no job consumer of its own), configured from the environment."""
    settings = load_settings()
    if settings.secret_key is None:
        raise UsageError("set MEDVIDBENCH_SECRET_KEY (32+ characters) for a production server")
    runtime = Runtime(settings)
    attach_queue(runtime)
    return create_app(runtime)
