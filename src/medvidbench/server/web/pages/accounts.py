"""Log in, log out, sign up, and the account page: API tokens and team."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from medvidbench.core.errors import (
    MedVidBenchError,
    PermissionDeniedError,
)
from medvidbench.server.services import accounts, teams
from medvidbench.server.services.submission_reads import benchmark_slugs, list_submissions
from medvidbench.server.store.models import User
from medvidbench.server.web import token_reveal
from medvidbench.server.web.deps import (
    DbId,
    check_csrf,
    current_user,
    log_in,
    log_out,
    secret_key,
)
from medvidbench.server.web.limits import network_of
from medvidbench.server.web.pages.common import see as _see
from medvidbench.server.web.render import notify, page

router = APIRouter(include_in_schema=False)


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "/") -> Response:
    return page(request, "login.html", next=next if next.startswith("/") else "/")


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    form = await request.form()
    check_csrf(request, form)
    target = str(form.get("next", "/"))
    target = target if target.startswith("/") and not target.startswith("//") else "/"
    rt = request.app.state.runtime
    username = str(form.get("username", ""))
    address = request.client.host if request.client else "?"
    throttle = request.app.state.login_failures
    wait = throttle.wait(address, username)
    if wait:
        answer = page(
            request,
            "login.html",
            status=429,
            next=target,
            error=f"too many failed attempts; try again in {int(wait) + 1} s",
        )
        answer.headers["Retry-After"] = str(int(wait) + 1)
        return answer
    try:
        user = await request.app.state.password_work.run(
            accounts.sign_in, rt, username, str(form.get("password", ""))
        )
    except MedVidBenchError as exc:
        throttle.failed(address, username)
        return page(request, "login.html", status=401, next=target, error=exc.message)
    throttle.succeeded(address, username)
    log_in(request, user)
    notify(request, "logged-in")
    return _see(target)


@router.post("/logout")
async def logout(request: Request) -> Response:
    check_csrf(request, await request.form())
    log_out(request)
    notify(request, "logged-out")
    return _see("/")


@router.get("/signup", response_class=HTMLResponse)
def signup_form(request: Request) -> Response:
    return page(request, "signup.html")


@router.post("/signup", response_class=HTMLResponse)
async def signup(request: Request) -> Response:
    rt = request.app.state.runtime
    if not rt.settings.signup_enabled:
        raise PermissionDeniedError("sign-up is closed on this server; ask an admin")
    form = await request.form()
    check_csrf(request, form)
    # counted per network: an IPv6 client's whole /64, an IPv4 client's address
    address = network_of(request.client.host) if request.client else ""
    try:
        user = await request.app.state.password_work.run(  # argon2: off the event loop
            accounts.sign_up,
            rt,
            str(form.get("username", "")),
            str(form.get("password", "")),
            str(form.get("team", "")) or None,
            address,
        )
    except MedVidBenchError as exc:
        return page(
            request,
            "signup.html",
            status=exc.http_status,
            error=exc.message,
            username=str(form.get("username", "")),
            team=str(form.get("team", "")),  # what was typed survives the error
        )
    log_in(request, user)
    notify(request, "signed-up" if user.approved else "signed-up-waiting")
    return _see("/account")


@router.get("/account", response_class=HTMLResponse)
def account(request: Request) -> Response:
    user = current_user(request)
    if user is None:
        return _see("/login?next=/account")
    secret = token_reveal.pop_secret(request, secret_key(request.app.state.runtime))
    if secret and not accounts.fresh_token(request.app.state.runtime, user, secret):
        secret = None  # revoked, another user's, or too old to show
    return _account_page(request, user, secret)


def _account_page(
    request: Request, user: User, secret: str | None = None, status: int = 200, error: str = ""
) -> Response:
    rt = request.app.state.runtime
    tokens = accounts.list_tokens(rt, user)
    place = teams.standing_of(rt, user)
    response = page(
        request,
        "account.html",
        status=status,
        user=user,
        tokens=tokens,
        secret=secret,
        submissions=list_submissions(rt, user),
        benchmark_of=benchmark_slugs(rt),
        team=place.team,
        owner=place.owner,
        members=place.members,
        requested=place.requested,
        requests=place.requests,
        error=error,
    )
    if secret:  # a page holding a token's secret is never cached
        response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/account/tokens")
def tokens_list(request: Request) -> Response:
    """The tokens live on the account page (an old bookmark or a typed address lands there)."""
    return _see("/account#tokens")


@router.post("/account/tokens")
async def token_create(request: Request) -> Response:
    user = current_user(request)
    if user is None:
        return _see("/login?next=/account")
    form = await request.form()
    check_csrf(request, form)
    rt = request.app.state.runtime
    secret = token_reveal.new_secret(request, secret_key(rt))
    accounts.create_token(rt, user, str(form.get("name", "token")), secret)
    # Shown once, on the page this redirects to: a reload there creates nothing. Only a seed
    # travels in the session cookie (see token_reveal).
    return _see("/account#tokens")


@router.post("/account/team")
async def team_join(request: Request) -> Response:
    """Create a team (you own it) or ask to join one (its owner decides)."""
    return await _account_action(
        request,
        lambda rt, me, form: teams.ask_to_join(rt, me, str(form.get("name", ""))),
        errors_on_page=True,
    )


async def _account_action(
    request: Request, action: Callable[[Any, User, Any], object], errors_on_page: bool = False
) -> Response:
    """A form on the account page: logged in, CSRF-checked, then one service call. With
    ``errors_on_page`` a refusal is shown on the account page instead of an error page."""
    user = current_user(request)
    if user is None:
        return _see("/login?next=/account")
    form = await request.form()
    check_csrf(request, form)
    try:
        action(request.app.state.runtime, user, form)
    except MedVidBenchError as exc:
        if not errors_on_page:
            raise
        return _account_page(request, user, status=exc.http_status, error=exc.message)
    return _see("/account")


@router.post("/account/team/leave")
async def team_leave(request: Request) -> Response:
    return await _account_action(request, lambda rt, me, _: teams.quit_team(rt, me))


@router.post("/account/team/requests/{user_id}")
async def team_decide(request: Request, user_id: DbId) -> Response:
    """The team's owner (or an admin) approves or declines a request to join."""
    return await _account_action(
        request,
        lambda rt, me, form: teams.settle_request(
            rt, me, user_id, form.get("decision") == "approve"
        ),
    )


@router.post("/account/team/members/{user_id}/remove")
async def team_remove(request: Request, user_id: DbId) -> Response:
    """The team's owner (or an admin) takes a member out of the team."""
    return await _account_action(
        request, lambda rt, me, _: teams.remove_member(rt, me, user_id), errors_on_page=True
    )


@router.post("/account/tokens/{token_id}/revoke")
async def token_revoke(request: Request, token_id: DbId) -> Response:
    return await _account_action(request, lambda rt, me, _: accounts.revoke_token(rt, me, token_id))
