"""A benchmark's pages, under ``/b/<slug>/``: its boards, compare, submit and About; the front
page; and redirects from the single-benchmark URLs of earlier versions to the default
benchmark's, so that old links keep working."""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from medvidbench.core.config import judge_wanted
from medvidbench.core.errors import (
    InvalidSubmissionError,
    MedVidBenchError,
    NotFoundError,
    UsageError,
)
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import boards, catalogue, comparisons, judge_cards
from medvidbench.server.services.board_reads import KINDS
from medvidbench.server.services.quota import quota
from medvidbench.server.services.submissions import submit
from medvidbench.server.services.test_sets import cluster_count, current_benchmark
from medvidbench.server.store.models import User
from medvidbench.server.web.api import receive_upload
from medvidbench.server.web.deps import check_csrf, current_user, entry_ids
from medvidbench.server.web.pages.common import see
from medvidbench.server.web.render import page
from medvidbench.server.web.views import board_context, origins
from medvidbench.version import __version__

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
async def home(request: Request) -> Response:
    """One hosted benchmark: its official board. Several: the list of them."""
    rt = request.app.state.runtime
    if len(rt.hosted) == 1:
        return await board(request, rt.hosted[0], "official")
    return await run_in_threadpool(_home, request)


def _home(request: Request) -> Response:
    """The list of hosted benchmarks (reads the database: never on the event loop)."""
    hosted = catalogue.hosted(request.app.state.runtime)
    return page(request, "home.html", hosted=hosted, slug=None)


@router.get("/b/{slug}/", response_class=HTMLResponse)
async def benchmark_home(request: Request, slug: str) -> Response:
    return await board(request, slug, "official")


@router.get("/b/{slug}", include_in_schema=False)
def benchmark_home_slash(request: Request, slug: str) -> Response:
    request.app.state.runtime.definition(slug)  # unknown: 404, not a redirect to one
    return RedirectResponse(f"/b/{slug}/", status_code=308)


@router.get("/b/{slug}/board/{kind}", response_class=HTMLResponse)
async def board(request: Request, slug: str, kind: str) -> Response:
    """A board. The page every visitor sees is answered from memory when this process has it
    for the board's current version (no thread, no database read); anything else is built in
    a worker thread."""
    if _everyones_view(request):
        held = _held_board(request, slug, kind)
        if held is not None:
            return held
        return await run_in_threadpool(_shared_board, request, slug, kind)
    return await run_in_threadpool(_own_board, request, slug, kind)


def _own_board(request: Request, slug: str, kind: str) -> Response:
    rt = request.app.state.runtime
    params, cols = dict(request.query_params), request.query_params.getlist("col")
    context = board_context(rt, kind, params, slug, cols)
    return page(request, "board.html", slug=slug, **context)


def _everyones_view(request: Request) -> bool:
    """A board as every visitor sees it: no session (not signed in, nothing to show once), no
    token, no filter or sort asked for."""
    return (
        not request.session and "authorization" not in request.headers and not request.query_params
    )


def _held_board(request: Request, slug: str, kind: str) -> Response | None:
    """The page every visitor sees, if this process holds it for the board's version as
    recently read (:class:`~medvidbench.server.store.board_cache.RecentVersions`); else None.
    Reads memory only: it runs on the event loop."""
    rt = request.app.state.runtime
    if kind not in KINDS:
        return None  # the thread's path answers the 404
    version = rt.board_versions.recent(slug)  # held only for a hosted slug, checked when read
    if version is None:
        return None
    test_set, generation = version
    held = rt.boards.peek(("page", request.url.path, test_set, kind), generation)
    if held is None:
        return None
    html, packed = held
    return _answer(request, html, packed, test_set, generation, kind)


def _shared_board(request: Request, slug: str, kind: str) -> Response:
    """The page rendered once per change of the board and served as it is to every visitor,
    with an ETag, so that a browser that has it gets a 304 (a board changes when a submission
    is scored, not when it is read)."""
    rt = request.app.state.runtime
    definition = rt.definition(slug)
    if kind not in KINDS:
        raise NotFoundError(f"no board {kind!r}")
    test_set, generation = rt.board_versions.get(
        definition.slug, lambda: boards.board_version(rt, definition.slug)
    )

    def render() -> tuple[bytes, bytes]:
        context = board_context(rt, kind, {}, definition.slug, [])
        html = bytes(page(request, "board.html", slug=definition.slug, **context).body)
        return html, gzip.compress(html, compresslevel=6, mtime=0)  # a tenth of the bytes

    html, packed = rt.boards.get(("page", request.url.path, test_set, kind), generation, render)
    return _answer(request, html, packed, test_set, generation, kind)


def _answer(
    request: Request, html: bytes, packed: bytes, test_set: int, generation: int, kind: str
) -> Response:
    """The page every visitor sees: a 304 for a browser that has this version, else the page,
    gzip-compressed for a client that takes it."""
    tag = f'W/"{__version__}-{test_set}-{generation}-{kind}"'
    headers = {
        "ETag": tag,
        "Cache-Control": "no-cache",
        "Vary": "Cookie, Authorization, Accept-Encoding",
    }
    if tag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return Response(packed, media_type="text/html; charset=utf-8", headers=headers)
    return Response(html, media_type="text/html; charset=utf-8", headers=headers)


@router.get("/b/{slug}/compare", response_class=HTMLResponse)
def compare_page(request: Request, slug: str, entries: str = "", q: str = "") -> Response:
    """Pick 2 to 4 entries from a searchable list (ticked boxes, or ``?entries=3,7``); with
    none picked, the official board's top 3, shown but not ticked (ticking two of your own
    then compares those two). The ticked entries head the list. Wrong picks are named, never
    trimmed."""
    rt = request.app.state.runtime
    definition = rt.definition(slug)
    listed = [
        Choice(kind, r)
        for kind in ("official", "community")
        for r in boards.board_rows(rt, kind, slug=definition.slug)
    ]
    rows = {c.row.entry_id: c.row for c in listed}
    asked = [x.strip() for x in entries.split(",") if x.strip()]
    asked += [x.strip() for x in request.query_params.getlist("pick") if x.strip()]
    problems, default = [], ""
    numbers, unknown = entry_ids(asked)
    unknown += [str(i) for i in numbers if i not in rows]
    if unknown:
        problems.append(f"No entry {', '.join(unknown)} on the {definition.title} boards.")
    elif asked and not 2 <= len(numbers) <= 4:
        problems.append(f"Choose 2 to 4 entries to compare; {len(numbers)} chosen.")
    ids = [i for i in numbers if i in rows]
    if not asked:
        for kind in ("official", "community"):
            top = [c.row.entry_id for c in listed if c.kind == kind][:3]
            if len(top) >= 2:
                ids, default = top, kind
                break
    chosen = [] if problems else [rows[i] for i in ids]
    origin, mixed = origins(chosen, current_benchmark(rt, definition.slug).is_demo)
    needle = q.strip().casefold()
    matching = [
        c.row.entry_id
        for c in listed
        if needle in c.row.model_name.casefold() or needle in c.row.team.casefold()
    ]
    ticked = ids if asked else []
    shown = [c for c in listed if not needle or c.row.entry_id in ids or c.row.entry_id in matching]
    shown.sort(key=lambda c: c.row.entry_id not in ticked)  # stable: the ticked ones first
    return page(
        request,
        "compare.html",
        status=400 if problems else 200,
        slug=definition.slug,
        chosen=chosen,
        origin=origin,
        mixed=mixed,
        comparisons=comparisons.compare(rt, chosen, definition.slug),
        choices=shown,
        problems=problems,
        default=default,
        q=q,
        no_match=bool(needle) and not matching,
        metrics=definition.metrics,
        metrics_by_key=definition.metrics_by_key,
        ticked=ticked,
        judge_on=judge_wanted(rt.settings),
    )


@dataclass(frozen=True, slots=True)
class Choice:
    """An entry the compare page offers, with the board it is on."""

    kind: str
    row: Any


@router.get("/b/{slug}/submit", response_class=HTMLResponse)
def submit_form(request: Request, slug: str) -> Response:
    slug = request.app.state.runtime.definition(slug).slug
    user = current_user(request)
    # Anyone may read how to submit (format, example, limits, the validator); submitting
    # itself needs an account.
    team = catalogue_team_name(request, user)
    values = {"organisation": team} if team else None
    return page(
        request, "submit.html", slug=slug, user=user, values=values, **_quota(request, user, slug)
    )


def catalogue_team_name(request: Request, user: User | None) -> str:
    """The submitter's team, the submit form's default organisation ("" without a team)."""
    if user is None or user.team_id is None:
        return ""
    from medvidbench.server.services.teams import standing_of

    team = standing_of(request.app.state.runtime, user).team
    return team.name if team is not None else ""


def _quota(request: Request, user: User | None, slug: str | None = None) -> dict[str, Any]:
    rt = request.app.state.runtime
    s = rt.settings
    return {
        "quota_day": s.quota_per_day,
        "quota_month": s.quota_per_month,
        "max_mib": s.max_submission_bytes / 2**20,
        # what this submitter (and their team) has left, per rolling window
        "windows": [w for w in quota(rt, user, slug) if w.limit] if user else [],
    }


@router.post("/b/{slug}/submit", response_class=HTMLResponse)
async def submit_post(request: Request, slug: str) -> Response:
    rt = request.app.state.runtime
    slug = rt.definition(slug).slug
    user = current_user(request)
    if user is None:
        return see(f"/login?next=/b/{slug}/submit")
    form = await request.form()
    try:
        return await _submit(request, rt, slug, user, form)
    finally:
        await form.close()  # the upload's spooled file closed now, not whenever it is collected


async def _submit(request: Request, rt: Runtime, slug: str, user: User, form: FormData) -> Response:
    """The submit form's work: the file received, submitted, and the page or redirect."""
    check_csrf(request, form)
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
            "visibility",
        )
    }
    received = None
    again = {"slug": slug, "user": user, "values": values, **_quota(request, user, slug)}
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
            visibility=values["visibility"] or "public",
            filename=upload.filename,
            benchmark=slug,
        )
    except InvalidSubmissionError as exc:
        return page(
            request,
            "submit.html",
            status=422,
            problems=exc.problems.items,
            problem_total=len(exc.problems),
            **again,
        )
    except MedVidBenchError as exc:
        return page(request, "submit.html", status=exc.http_status, error=exc.message, **again)
    finally:
        if received is not None:
            received.unlink(missing_ok=True)
    return see(f"/submissions/{sub.id}")


@router.get("/b/{slug}/about", response_class=HTMLResponse)
def about(request: Request, slug: str) -> Response:
    rt = request.app.state.runtime
    definition = rt.definition(slug)
    bench = current_benchmark(rt, definition.slug)
    return page(
        request,
        "about.html",
        slug=definition.slug,
        definition=definition,
        metrics=definition.metrics,
        tasks=definition.tasks,
        profiles=definition.profiles,
        bench=bench,
        judge_card=judge_cards.card_of(rt, bench.gt_sha256) if definition.judging else None,
        clusters=cluster_count(rt, bench),
        reported=list(definition.presentation.reported_results()),
        detectable=comparisons.detectable(rt, definition.slug),
    )


def _to_default(request: Request, rest: str) -> RedirectResponse:
    """The default benchmark's page for a single-benchmark URL of an earlier version (307:
    a form posted to the old address is posted again to the new one)."""
    slug = request.app.state.runtime.default_slug
    query = f"?{request.url.query}" if request.url.query else ""
    return RedirectResponse(f"/b/{slug}/{rest}{query}", status_code=307)


@router.get("/board/{kind}")
def old_board(request: Request, kind: str) -> Response:
    return _to_default(request, f"board/{quote(kind, safe='')}")


@router.get("/compare")
def old_compare(request: Request) -> Response:
    return _to_default(request, "compare")


@router.api_route("/submit", methods=["GET", "POST"])
def old_submit(request: Request) -> Response:
    return _to_default(request, "submit")


@router.get("/about")
def old_about(request: Request) -> Response:
    return _to_default(request, "about")
