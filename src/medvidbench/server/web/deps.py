"""Request-scoped dependencies: the runtime, the current user, CSRF checks."""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import Path, Query, Request

from medvidbench.core.errors import AuthenticationError, PermissionDeniedError
from medvidbench.server.roles import Role
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import accounts
from medvidbench.server.services.accounts import require_role
from medvidbench.server.store.models import User


def runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


def current_user(request: Request) -> User | None:
    """The user of a bearer token, or of the session cookie; None for a visitor."""
    rt = runtime(request)
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return accounts.caller(rt, bearer=header[7:].strip())
    secret = request.session.get("sid")
    if not secret:
        return None
    user = accounts.caller(rt, web_session=str(secret))
    if user is None:  # logged out elsewhere, expired, or the account was deactivated
        request.session.clear()
    return user


def log_in(request: Request, user: User) -> None:
    """Start a server-side session for ``user`` in a fresh cookie (no fixation)."""
    secret = accounts.open_web_session(runtime(request), user)
    request.session.clear()
    request.session["sid"] = secret


def log_out(request: Request) -> None:
    """End the session on the server, then forget the cookie."""
    accounts.close_web_session(runtime(request), str(request.session.get("sid", "")))
    request.session.clear()


SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def api_user(request: Request) -> User:
    """The API's caller. A change (POST and the like) needs an API token: a browser's session
    cookie would let any page the user visits act in their name (cross-site request forgery)."""
    bearer = request.headers.get("authorization", "").lower().startswith("bearer ")
    if request.method not in SAFE_METHODS and not bearer:
        raise AuthenticationError(
            "send an API token: Authorization: Bearer <token> (a browser session cannot make "
            "changes through the API)"
        )
    user = current_user(request)
    if user is None:
        raise AuthenticationError("send an API token: Authorization: Bearer <token>")
    return user


def is_admin(request: Request) -> bool:
    """Whether the caller (token or session) is an administrator; a bad token is no one."""
    try:
        user = current_user(request)
    except AuthenticationError:
        return False
    return user is not None and user.role == Role.ADMIN


def admin_user(request: Request) -> User:
    return require_role(current_user(request), Role.ADMIN)


def csrf_token(request: Request) -> str:
    token = request.session.get("csrf")
    if not token:
        token = request.session["csrf"] = secrets.token_urlsafe(24)
    return str(token)


class LazyCsrf:
    """The session's CSRF token, made only when a page shows a form that carries it: a page
    without a form (a board, to a visitor) then writes no session, sets no cookie, and is the
    same for every visitor (so it can be cached)."""

    __slots__ = ("_request", "_value")

    def __init__(self, request: Request) -> None:
        self._request, self._value = request, ""

    def __str__(self) -> str:
        if not self._value:
            self._value = csrf_token(self._request)
        return self._value

    def __html__(self) -> str:
        return str(self)  # URL-safe base64: nothing to escape


def check_csrf(request: Request, form: Any) -> None:
    """Forms carry the session's CSRF token; a cross-site post does not have it."""
    sent = str(form.get("csrf", ""))
    expected = str(request.session.get("csrf", ""))
    # Defence in depth beside the token: a browser names the page's origin on a POST. Host and
    # port are compared (a page on another port of this host is another origin), and the
    # scheme once the request is known to be https (directly, or from a trusted proxy's
    # X-Forwarded-Proto): a plain-http page cannot post to the https site. An https origin on
    # an http request is let through, as a proxy not (yet) trusted may end TLS.
    origin = request.headers.get("origin", "null")
    sent_from = urlsplit(origin) if origin != "null" else None
    foreign = sent_from is not None and (
        sent_from.netloc != request.url.netloc
        or (request.url.scheme == "https" and sent_from.scheme != "https")
    )
    if foreign or not expected or not hmac.compare_digest(sent, expected):
        raise PermissionDeniedError(
            "the form expired or came from another site; reload the page and try again"
        )


# ids are INTEGER columns: 32 bits on PostgreSQL, which answers a larger one with an error
MAX_ID = 2**31 - 1
DbId = Annotated[int, Path(ge=1, le=MAX_ID, description="A database id.")]
# An optional evaluation of a submission (?evaluation=ID): none means the boards' one.
EvaluationId = Annotated[
    int | None,
    Query(ge=1, le=MAX_ID, description="Show this evaluation (default: the boards' one)."),
]


def form_id(value: str | None) -> int:
    """An id from a form field, within what the database can hold."""
    from medvidbench.core.errors import UsageError

    text = (value or "").strip()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_ID:
        raise UsageError(f"expected an id, got {text[:20]!r}")
    return int(text)


def entry_ids(values: list[str]) -> tuple[list[int], list[str]]:
    """Ids from a query (``?entries=3,7``), in order without repeats, and the values that
    cannot be one (not digits, 0, or past what the database holds), shortened for showing."""
    ids: list[int] = []
    bad: list[str] = []
    for value in (v.strip() for v in values):
        # length first: int() of thousands of digits is slow, and past 4,300 refused
        if value.isascii() and value.isdigit() and len(value) <= 10 and 1 <= int(value) <= MAX_ID:
            ids.append(int(value))
        elif value:
            bad.append(
                value if len(value) <= 24 else f"{value[:20]}... ({len(value):,} characters)"
            )
    return list(dict.fromkeys(ids)), bad


def secret_key(runtime: Runtime) -> str:
    """The configured key, or one generated into the data folder (:attr:`Runtime.secret_key`)."""
    return runtime.secret_key
