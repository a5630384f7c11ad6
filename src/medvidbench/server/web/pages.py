"""Server-rendered pages. They work without JavaScript; a little script adds live updates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from medvidbench.core.errors import (
    InvalidSubmissionError,
    MedVidBenchError,
    NotFoundError,
    PermissionDeniedError,
    UsageError,
)
from medvidbench.server.services import accounts, administration, leaderboards, teams
from medvidbench.server.services.submissions import (
    current_benchmark,
    delete_submission,
    list_submissions,
    submission_view,
    submit,
)
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import User
from medvidbench.server.web.api import receive_upload
from medvidbench.server.web.deps import (
    DbId,
    admin_user,
    check_csrf,
    current_user,
    form_id,
    log_in,
    log_out,
)
from medvidbench.server.web.render import page
from medvidbench.server.web.views import board_context

router = APIRouter(include_in_schema=False)


def _me(session: Any, user: User) -> User:
    """The logged-in user's row in this session."""
    row = session.get(User, user.id)
    if row is None:
        raise PermissionDeniedError("your account no longer exists")
    return row  # type: ignore[no-any-return]


def _see(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


@router.get("/", response_class=HTMLResponse)
def home(request: Request) -> Response:
    return board(request, "official")


@router.get("/board/{kind}", response_class=HTMLResponse)
def board(request: Request, kind: str) -> Response:
    rt = request.app.state.runtime
    context = board_context(rt, kind, dict(request.query_params))
    return page(request, "board.html", **context)


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(request: Request, submission_id: DbId) -> Response:
    rt = request.app.state.runtime
    view = submission_view(rt, submission_id, current_user(request))
    return page(request, "submission.html", sub=view, metrics=rt.benchmark.metrics)


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, entries: str = "") -> Response:
    rt = request.app.state.runtime
    ids = [int(x) for x in entries.split(",") if x.strip().isascii() and x.strip().isdigit()][:4]
    rows = {
        r.entry_id: r for k in ("official", "community") for r in leaderboards.board_rows(rt, k)
    }
    chosen = [rows[i] for i in ids if i in rows]
    return page(
        request,
        "compare.html",
        chosen=chosen,
        choices=list(rows.values()),
        metrics=rt.benchmark.metrics,
        ids=ids,
    )


@router.get("/submit", response_class=HTMLResponse)
def submit_form(request: Request) -> Response:
    user = current_user(request)
    if user is None:
        return _see("/login?next=/submit")
    return page(request, "submit.html", user=user, **_quota(request, user))


def _quota(request: Request, user: User) -> dict[str, Any]:
    s = request.app.state.runtime.settings
    return {"quota_day": s.quota_per_day, "quota_month": s.quota_per_month}


@router.post("/submit", response_class=HTMLResponse)
async def submit_post(request: Request) -> Response:
    user = current_user(request)
    if user is None:
        return _see("/login?next=/submit")
    form = await request.form()
    check_csrf(request, form)
    rt = request.app.state.runtime
    upload = form.get("file")
    values = {
        k: str(form.get(k, ""))
        for k in (
            "model_name",
            "organisation",
            "model_url",
            "contact",
            "frames",
            "prompting",
            "revision",
        )
    }
    received = None
    try:
        if upload is None or isinstance(upload, str) or not upload.filename:
            raise UsageError("choose a prediction file to upload")
        received = await receive_upload(upload, rt)
        settings = {k: values[k] for k in ("frames", "prompting", "revision") if values[k]}
        sub = await run_in_threadpool(  # off the event loop, as in the API
            submit,
            rt,
            user,
            received,
            values["model_name"],
            organisation=values["organisation"],
            model_url=values["model_url"] or None,
            contact=values["contact"] or None,
            settings=settings,
            filename=upload.filename,
        )
    except InvalidSubmissionError as exc:
        return page(
            request,
            "submit.html",
            status=422,
            user=user,
            values=values,
            problems=exc.problems.items,
            problem_total=len(exc.problems),
            **_quota(request, user),
        )
    except MedVidBenchError as exc:
        return page(
            request,
            "submit.html",
            status=exc.http_status,
            user=user,
            values=values,
            error=exc.message,
            **_quota(request, user),
        )
    finally:
        if received is not None:
            received.unlink(missing_ok=True)
    return _see(f"/submissions/{sub.id}")


@router.get("/about", response_class=HTMLResponse)
def about(request: Request) -> Response:
    rt = request.app.state.runtime
    return page(
        request,
        "about.html",
        metrics=rt.benchmark.metrics,
        tasks=rt.benchmark.tasks,
        profiles=rt.benchmark.profiles,
        bench=current_benchmark(rt),
    )


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
    key = f"{request.client.host if request.client else '?'}|{username.casefold()}"
    limiter = request.app.state.login_failures
    wait = limiter.blocked(key)
    if wait:
        return page(
            request,
            "login.html",
            status=429,
            next=target,
            error=f"too many failed attempts; try again in {int(wait) + 1} s",
        )
    try:
        with rt.sessions() as session:
            user = accounts.authenticate(session, username, str(form.get("password", "")))
    except MedVidBenchError as exc:
        limiter.fail(key)
        return page(request, "login.html", status=401, next=target, error=exc.message)
    limiter.reset(key)
    log_in(request, user)
    return _see(target)


@router.post("/logout")
async def logout(request: Request) -> Response:
    check_csrf(request, await request.form())
    log_out(request)
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
    address = request.client.host if request.client else ""
    try:
        with transaction(rt.sessions) as session:
            accounts.check_signup_rate(session, address, rt.settings.signup_per_address_per_day)
            user = accounts.create_user(
                session,
                str(form.get("username", "")),
                str(form.get("password", "")),
                team=str(form.get("team", "")) or None,
                approved=not rt.settings.signup_approval,
                address=address,
            )
    except MedVidBenchError as exc:
        return page(
            request,
            "signup.html",
            status=exc.http_status,
            error=exc.message,
            username=str(form.get("username", "")),
        )
    log_in(request, user)
    return _see("/account")


@router.get("/account", response_class=HTMLResponse)
def account(request: Request) -> Response:
    user = current_user(request)
    if user is None:
        return _see("/login?next=/account")
    return _account_page(request, user)


def _account_page(
    request: Request, user: User, secret: str | None = None, status: int = 200, error: str = ""
) -> Response:
    rt = request.app.state.runtime
    with rt.sessions() as session:
        tokens = accounts.list_tokens(session, user)
        place = teams.standing(session, user)
    response = page(
        request,
        "account.html",
        status=status,
        user=user,
        tokens=tokens,
        secret=secret,
        submissions=list_submissions(rt, user),
        team=place.team,
        owner=place.owner,
        requested=place.requested,
        requests=place.requests,
        error=error,
    )
    if secret:  # a page holding a token's secret is never cached
        response.headers["Cache-Control"] = "no-store"
    return response


@router.post("/account/tokens")
async def token_create(request: Request) -> Response:
    user = current_user(request)
    if user is None:
        return _see("/login?next=/account")
    form = await request.form()
    check_csrf(request, form)
    rt = request.app.state.runtime
    with transaction(rt.sessions) as session:
        secret, _ = accounts.create_token(
            session, _me(session, user), str(form.get("name", "token"))[:80] or "token"
        )
    # Shown once, in this response only: the secret never travels in the session cookie.
    return _account_page(request, user, secret)


@router.post("/account/team")
async def team_join(request: Request) -> Response:
    """Create a team (you own it) or ask to join one (its owner decides)."""
    return await _account_action(
        request,
        lambda session, me, form: teams.join_or_request(session, me, str(form.get("name", ""))),
        errors_on_page=True,
    )


async def _account_action(
    request: Request, action: Callable[[Any, User, Any], object], errors_on_page: bool = False
) -> Response:
    """A form on the account page: logged in, CSRF-checked, done in one transaction. With
    ``errors_on_page`` a refusal is shown on the account page instead of an error page."""
    user = current_user(request)
    if user is None:
        return _see("/login?next=/account")
    form = await request.form()
    check_csrf(request, form)
    try:
        with transaction(request.app.state.runtime.sessions) as session:
            action(session, _me(session, user), form)
    except MedVidBenchError as exc:
        if not errors_on_page:
            raise
        return _account_page(request, user, status=exc.http_status, error=exc.message)
    return _see("/account")


@router.post("/account/team/leave")
async def team_leave(request: Request) -> Response:
    return await _account_action(request, lambda session, me, _: teams.leave(session, me))


@router.post("/account/team/requests/{user_id}")
async def team_decide(request: Request, user_id: DbId) -> Response:
    """The team's owner (or an admin) approves or declines a request to join."""
    return await _account_action(
        request,
        lambda session, me, form: teams.decide(
            session, me, user_id, form.get("decision") == "approve"
        ),
    )


@router.post("/account/tokens/{token_id}/revoke")
async def token_revoke(request: Request, token_id: DbId) -> Response:
    return await _account_action(
        request, lambda session, me, _: accounts.revoke_token(session, me, token_id)
    )


@router.get("/admin", response_class=HTMLResponse)
def admin(request: Request) -> Response:
    user = admin_user(request)
    rt = request.app.state.runtime
    seen = administration.overview(rt, user)
    return page(
        request,
        "admin.html",
        user=user,
        users=seen.users,
        subs=seen.submissions,
        log=seen.log,
        official=leaderboards.board_rows(rt, "official"),
        metrics=rt.benchmark.metrics,
        has_tokens=seen.has_tokens,
    )


@router.post("/admin/{action}")
async def admin_action(request: Request, action: str) -> Response:
    actor = admin_user(request)
    form = await request.form()
    check_csrf(request, form)
    if form.get("confirm") != "yes":
        raise UsageError("tick the confirmation box to do this")
    rt = request.app.state.runtime
    value = {k: str(v) for k, v in form.items() if isinstance(v, str)}
    handler = _ADMIN.get(action)
    if handler is None:
        raise NotFoundError(f"no admin action {action!r}")
    try:
        handler(rt, actor, value)
    except ValueError as exc:
        raise UsageError(f"invalid value: {exc}") from None
    return _see("/admin")


def _role(rt: Any, actor: User, f: dict[str, str]) -> None:
    with transaction(rt.sessions) as session:
        accounts.set_role(session, actor, f.get("username", ""), f.get("role", ""))


def _add(rt: Any, actor: User, f: dict[str, str]) -> None:
    metrics = {m.key: float(f[m.key]) for m in rt.benchmark.metrics if f.get(m.key, "").strip()}
    leaderboards.add_reported(
        rt,
        actor,
        f.get("model_name", ""),
        f.get("team", ""),
        metrics,
        source=f.get("source", "") or "added by an admin",
        model_url=f.get("model_url") or None,
    )


def _rescore(rt: Any, actor: User, f: dict[str, str]) -> None:
    from medvidbench.server.jobs import Jobs

    sid = form_id(f.get("submission_id"))
    with transaction(rt.sessions) as session:
        accounts.audit(
            session,
            actor,
            f"submission.{f.get('kind', 'rescore')}",
            f"submission:{sid}",
            profile=f.get("profile", ""),
        )
    if isinstance(rt.queue, Jobs):
        if f.get("kind") == "rejudge":
            from medvidbench.server.services.processing import request_rejudge

            if request_rejudge(rt, sid):
                rt.queue.judge(sid)
        else:
            rt.queue.rescore(sid, f.get("profile", "strict-v2"))


def _approve(rt: Any, actor: User, f: dict[str, str]) -> None:
    with transaction(rt.sessions) as session:
        accounts.approve_user(session, actor, f.get("username", ""))


_ADMIN: dict[str, Any] = {
    "role": _role,
    "approve": _approve,
    "promote": lambda rt, a, f: leaderboards.promote(rt, a, form_id(f.get("submission_id"))),
    "add": _add,
    "remove": lambda rt, a, f: leaderboards.remove_entry(rt, a, form_id(f.get("entry_id"))),
    "delete": lambda rt, a, f: delete_submission(rt, a, form_id(f.get("submission_id"))),
    "rescore": _rescore,
}
