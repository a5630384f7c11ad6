"""Plain ASGI middleware: security headers, Secure cookies, and who may send an upload.

Plain ASGI rather than Starlette's ``BaseHTTPMiddleware``: that one runs the app in a task
group, so an error raised while a body streams in reaches the server wrapped in an
``ExceptionGroup`` (a 500) instead of as itself.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from starlette.concurrency import run_in_threadpool

from medvidbench.core.errors import AuthenticationError
from medvidbench.server.outages import is_database_outage
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.accounts import caller
from medvidbench.server.web.limits import answer

# No inline script anywhere. Inline *styles* are allowed: the plotly bundle (served from this
# server) injects its own <style> elements, and styles cannot run code.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; "
    "base-uri 'self'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}

# Paths that take a prediction file, and how their sender must be authenticated: the API by a
# token only (a browser's cookie cannot be used to submit in its owner's name from another
# site), the page by its logged-in session (plus the form's CSRF token, checked by the page).
_TOKEN_UPLOAD = re.compile(r"/api/v1(?:/benchmarks/[a-z0-9][a-z0-9-]{0,39})?/submissions")
_SESSION_UPLOAD = re.compile(r"(?:/b/[a-z0-9][a-z0-9-]{0,39})?/submit")


def upload_kind(path: str) -> str | None:
    """``token`` or ``session`` for a path that takes a prediction file, else None.

    Examples:
        >>> upload_kind("/api/v1/benchmarks/medvidbench/submissions"), upload_kind("/submit")
        ('token', 'session')
        >>> upload_kind("/login") is None
        True
    """
    if _TOKEN_UPLOAD.fullmatch(path):
        return "token"
    return "session" if _SESSION_UPLOAD.fullmatch(path) else None


def is_upload(path: str) -> bool:
    return upload_kind(path) is not None


class SecurityHeaders:
    """Security headers on every response; cookies marked ``Secure`` on HTTPS requests.

    Whether a request is HTTPS comes from the ASGI scope, which :mod:`~.proxies` fills from
    ``X-Forwarded-Proto`` when the request came through a trusted proxy.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        secure = scope.get("scheme") == "https"

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [
                    (k.lower().encode(), v.encode())
                    for k, v in HEADERS.items()
                    if k.lower().encode() not in present
                ]
                if secure:
                    headers = [_secure_cookie(k, v) for k, v in headers]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _secure_cookie(name: bytes, value: bytes) -> tuple[bytes, bytes]:
    if name.lower() == b"set-cookie" and b"secure" not in value.lower():
        return name, value + b"; Secure"
    return name, value


class UploadGate:
    """Refuse an upload from anyone not authenticated before a byte of its body is read.

    Must sit inside the session middleware (it reads the decoded session).
    """

    def __init__(self, app: Any, runtime: Runtime) -> None:
        self.app, self.runtime = app, runtime

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        how = upload_kind(scope.get("path", "")) if scope["type"] == "http" else None
        if how is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        refused = await run_in_threadpool(self._refusal, scope, how)
        if refused is None:
            await self.app(scope, receive, send)
        elif how == "token":
            body = {"error": "AuthenticationError", "message": refused}
            await answer(send, 401, json.dumps(body).encode(), b"application/json")
        else:
            back = f"/login?next={scope['path']}".encode()  # a path upload_kind matched
            await answer(send, 303, headers=[(b"location", back)])

    def _refusal(self, scope: dict[str, Any], how: str) -> str | None:
        """None for a caller who may upload, else why not (a token sent and refused is told
        so, as every other route tells it, not asked to send one)."""
        headers = dict(scope.get("headers", []))
        try:
            if how == "token":
                auth = headers.get(b"authorization", b"").decode("latin-1")
                if not auth.lower().startswith("bearer ") or not auth[7:].strip():
                    return (
                        "send an API token: Authorization: Bearer <token> "
                        "(create one on your account page)"
                    )
                found = caller(self.runtime, bearer=auth[7:].strip())
                return None if found is not None else "invalid or revoked API token"
            secret = str(scope.get("session", {}).get("sid", ""))
            return None if caller(self.runtime, web_session=secret) is not None else "sign in"
        except AuthenticationError as exc:
            return exc.message
        except Exception as exc:
            if not is_database_outage(exc):
                raise
            # Nobody can be told apart while the database is down: the route meets the same
            # outage before it stores anything and answers 503 (HTML or JSON) with Retry-After.
            return None


def route_template(path: str, route: Any) -> str:
    """The template of the route that answered ``path``, with the prefix it was included
    under (``/api/v1`` + ``/submissions/{submission_id}``); ``unmatched`` without a route.

    The router records the route as it was declared, without the prefix of
    ``include_router``; the prefix is the part of the path before the tail the route's own
    pattern matches (the router matched the whole path, so it is never the visitor's text).
    """
    declared, pattern = getattr(route, "path", None), getattr(route, "path_regex", None)
    if not declared or pattern is None:
        return "unmatched"
    for i, char in enumerate(path):
        if char == "/" and pattern.match(path[i:]):
            return path[:i] + str(declared)
    return str(declared)


class RequestTimer:
    """Observes each HTTP request's time by method, route *template* and status class.

    The route is the matched template (``/b/{slug}/submissions/{submission_id}``), never the
    raw path, so that the metric has a bounded set of series; a path no route matched is
    ``unmatched``. The router records the matched route in the scope, read once it has run.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from medvidbench.server.metrics import instruments

        timer = instruments().http_seconds
        started = time.perf_counter()
        status = 500

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            template = route_template(scope.get("path", ""), scope.get("route"))
            timer.labels(scope["method"], template, f"{status // 100}xx").observe(
                time.perf_counter() - started
            )
