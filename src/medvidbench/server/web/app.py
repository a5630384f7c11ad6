"""The FastAPI application factory: ``create_app(runtime)``, callable many times."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.middleware.sessions import SessionMiddleware

from medvidbench.core.errors import DatabaseUnavailableError, MedVidBenchError, NotFoundError
from medvidbench.server.metrics import exposition, scrape_allowed
from medvidbench.server.outages import database_error, describe, is_database_outage
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.accounts import SESSION_DAYS
from medvidbench.server.web import deps
from medvidbench.server.web.limits import BodyLimit, Deadline, LoginThrottle, SlowWork
from medvidbench.server.web.middleware import (
    RequestTimer,
    SecurityHeaders,
    UploadGate,
    is_upload,
)
from medvidbench.server.web.proxies import ForwardedHeaders
from medvidbench.server.web.render import templates
from medvidbench.version import __version__

log = logging.getLogger("medvidbench.server.web")
STATIC = Path(__file__).parent / "static"
# Swagger UI's own files, by name (nothing else is served): version 5, which reads OpenAPI 3.1,
# as bundled by the fastapi-offline package; we use its files, not its code.
SWAGGER_FILES = {"swagger-ui.css": "text/css", "swagger-ui-bundle.js": "text/javascript"}
# The interactive API page: Swagger UI from this server, started by a script file of ours (the
# CSP allows no inline script, and a self-hosted server may not reach any CDN), in a main landmark
# and with our contrast fixes over Swagger UI's stylesheet (api-docs.css).
API_DOCS = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>medvidbench API</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<link rel="stylesheet" href="/static/vendor/swagger/swagger-ui.css">
<link rel="stylesheet" href="/static/api-docs.css">
</head><body><main id="swagger-ui"></main>
<script src="/static/vendor/swagger/swagger-ui-bundle.js"></script>
<script src="/static/api-docs.js"></script>
</body></html>
"""


def create_app(runtime: Runtime) -> FastAPI:
    """A complete app (pages, API, static files) over one runtime."""
    from medvidbench.server.web import api, pages

    app = FastAPI(
        title="medvidbench leaderboard API",
        version=__version__,
        docs_url=None,  # served from local files (assets below): FastAPI's page loads a CDN
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.runtime = runtime
    app.state.login_failures = LoginThrottle()
    app.state.password_work = SlowWork()
    _add_middleware(app, runtime)
    _add_error_handlers(app)
    app.include_router(assets)
    app.include_router(api.router, prefix="/api/v1")
    for router in pages.ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def _add_middleware(app: FastAPI, runtime: Runtime) -> None:
    # Each add_middleware wraps the ones added before it, so from the outside in: a trusted
    # proxy's headers, the timer, headers on every answer (413s and 503s included), the
    # deadline on reads, the body limit, the session cookie, and the check that an upload's
    # sender is logged in before its body is read.
    app.add_middleware(UploadGate, runtime=runtime)
    app.add_middleware(
        SessionMiddleware,
        secret_key=deps.secret_key(runtime),
        same_site="lax",
        session_cookie="mvb_session",
        max_age=SESSION_DAYS * 24 * 3600,
        https_only=False,  # SecurityHeaders marks the cookie Secure on every HTTPS request
    )
    app.add_middleware(
        BodyLimit,
        limit=lambda: runtime.settings.max_submission_bytes,
        is_upload=is_upload,
    )
    app.add_middleware(Deadline, seconds=lambda: runtime.settings.request_deadline)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(RequestTimer)  # every answer is timed, refusals included
    # Outermost: the visitor's address and scheme from X-Forwarded-* sent by a trusted proxy
    # (MEDVIDBENCH_TRUSTED_PROXIES), under any ASGI server: the nearest untrusted hop, never
    # an entry the visitor wrote (web/proxies.py).
    app.add_middleware(ForwardedHeaders, trusted=runtime.settings.trusted_proxies)


def _add_error_handlers(app: FastAPI) -> None:
    """Our errors, an unreachable database, the framework's HTTP and validation errors: JSON
    under /api, an HTML page elsewhere (:func:`_error`)."""

    @app.exception_handler(MedVidBenchError)
    async def on_error(request: Request, exc: MedVidBenchError) -> Response:
        answer = _error(request, exc.http_status, exc.message, exc.to_dict())
        retry_at = getattr(exc, "retry_after", None)  # a refused submission: when to try again
        if retry_at is not None:
            wait = int((retry_at - datetime.now(UTC)).total_seconds()) + 1
            answer.headers["Retry-After"] = str(max(1, wait))
        return answer

    @app.exception_handler(database_error())
    async def on_database(request: Request, exc: Exception) -> Response:
        if not is_database_outage(exc):  # a mistake of ours in a query: a 500, as before
            raise exc
        log.warning(
            "%s %s: the database is unreachable (%s)",
            request.method,
            request.url.path,
            describe(exc),
        )
        return await on_error(request, DatabaseUnavailableError())

    @app.exception_handler(HTTPException)
    async def on_http(request: Request, exc: HTTPException) -> Response:
        ours = _our_cause(exc)  # e.g. a 413 raised mid-way through a body being parsed
        if ours is not None:
            return await on_error(request, ours)
        message = str(exc.detail) if exc.detail else "error"
        return _error(request, exc.status_code, message, {"error": "HTTPError", "message": message})

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        problems = [
            {"where": ".".join(map(str, e.get("loc", ()))), "message": e.get("msg")}
            for e in exc.errors()
        ]
        message = "; ".join(f"{p['where']}: {p['message']}" for p in problems)
        return _error(
            request,
            422,
            message,
            {"error": "RequestValidationError", "message": message, "problems": problems},
        )


# What the server serves beside pages and API: vendored scripts, the API page, the favicon and
# the metrics scrape (none of them in the OpenAPI document).
assets = APIRouter(include_in_schema=False)


@assets.get("/static/vendor/plotly.min.js")
def plotly_js() -> FileResponse:
    import plotly

    bundle = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return FileResponse(
        bundle, media_type="text/javascript", headers={"Cache-Control": "public, max-age=86400"}
    )


@assets.get("/metrics")
def metrics(request: Request) -> Response:
    runtime = deps.runtime(request)
    # Not public: a bearer token or an allowed address (MEDVIDBENCH_METRICS_*); not found
    # at all when neither is configured.
    allowed = scrape_allowed(
        runtime,
        request.client.host if request.client else None,
        request.headers.get("authorization"),
    )
    if allowed is None:
        raise NotFoundError("no page /metrics")
    if not allowed:
        return Response(
            "metrics need a bearer token or an allowed address\n",
            status_code=401,
            media_type="text/plain",
            headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
        )
    body, content_type = exposition(runtime)
    return Response(body, media_type=content_type)


@assets.get("/api/docs")
def api_docs() -> HTMLResponse:
    return HTMLResponse(API_DOCS)


@assets.get("/static/vendor/swagger/{name}")
def swagger_file(name: str) -> FileResponse:
    if name not in SWAGGER_FILES:
        raise NotFoundError(f"no file {name!r}")
    import fastapi_offline

    return FileResponse(
        Path(fastapi_offline.__file__).parent / "static" / name,
        media_type=SWAGGER_FILES[name],
        headers={"Cache-Control": "public, max-age=86400"},
    )


@assets.get("/favicon.ico")
def favicon() -> FileResponse:
    # Browsers ask for /favicon.ico whatever the page says; answering it keeps consoles clean.
    return FileResponse(
        STATIC / "favicon.svg",
        media_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400"},
    )


def _our_cause(exc: BaseException) -> MedVidBenchError | None:
    """Our own error behind a framework error that wrapped it (a few links deep at most)."""
    seen: BaseException | None = exc
    for _ in range(6):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if isinstance(seen, MedVidBenchError):
            return seen
    return None


def _viewer(request: Request) -> tuple[Any, str]:
    """Who is signed in, and their CSRF token, for an error page's header: the page says the
    truth about the session (a signed-in user is never offered "Log in"). Nobody when that
    cannot be told (the database is what failed, or the session is not set up). A visitor
    who is not signed in gets no CSRF token, and so no session cookie: the page has no form
    for them, and a cookie would take them off the board every visitor shares."""
    try:
        user = deps.current_user(request)
        return user, (deps.csrf_token(request) if user is not None else "")
    except Exception:
        return None, ""


def _error(request: Request, status: int, message: str, body: dict[str, Any]) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse(body, status_code=status)
    user, csrf = _viewer(request)
    page = (
        templates()
        .get_template("error.html")
        .render(
            request=request,
            status=status,
            message=message,
            problems=body.get("problems", []),
            user=user,
            demo=False,
            csrf=csrf,
        )
    )
    return HTMLResponse(page, status_code=status)
