"""The REST API (``/api/v1``), described by the app's OpenAPI document."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from medvidbench.core.benchmark import Benchmark
from medvidbench.core.config import judge_summary
from medvidbench.core.errors import NotFoundError, UsageError
from medvidbench.server.runtime import Runtime, storing
from medvidbench.server.services import catalogue, events
from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.comparisons import compare as compare_rows
from medvidbench.server.services.details import submission_view
from medvidbench.server.services.exports import export_board
from medvidbench.server.services.health import readiness
from medvidbench.server.services.quota import quota
from medvidbench.server.services.submission_reads import list_submissions
from medvidbench.server.services.submissions import accept
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.services.visibility import set_visibility
from medvidbench.server.store.models import User
from medvidbench.server.web import deps, schemas
from medvidbench.server.web.limits import PayloadTooLargeError
from medvidbench.server.web.schemas import SubmissionCreated
from medvidbench.version import __version__

router = APIRouter(tags=["leaderboard"], responses=schemas.ERRORS)
Rt = Annotated[Runtime, Depends(deps.runtime)]
CHUNK = 1 << 20
QUEUE_DOWN = (
    "stored, but the job queue is down: scoring starts once it is back (no need to upload again)"
)


def _definition(rt: Runtime, slug: str | None) -> Benchmark:
    return rt.definition(slug)


@router.get("/health/live", response_model=schemas.Live)
@router.head("/health/live", include_in_schema=False)
def live() -> dict[str, str]:
    """The process is up and answering (nothing else is checked: see ``/health/ready``)."""
    return {"status": "ok", "version": __version__}


@router.get(
    "/health/ready",
    response_model=schemas.Ready,
    responses={503: {"model": schemas.Ready, "description": "A part is not ready; named."}},
)
@router.head("/health/ready", include_in_schema=False)
def ready(rt: Rt) -> JSONResponse:
    """Ready to serve: the database reachable and at this code's migration, the job queue
    reachable. 503 names each part that is not, and what is wrong with it."""
    checks = readiness(rt)
    failing = [part for part, state in checks.items() if state != "ok"]
    body = {"status": "unavailable" if failing else "ready", "failing": failing, "checks": checks}
    return JSONResponse(body, status_code=503 if failing else 200)


@router.get("/health", response_model=schemas.Health)
@router.head("/health", include_in_schema=False)
def health(rt: Rt, admin: Annotated[bool, Depends(deps.is_admin)]) -> dict[str, Any]:
    """Liveness and what this server holds (the top-level ``benchmark``, ``samples`` and
    ``demo`` describe the default benchmark's test set; null before one is loaded: a server
    with no test set yet is up, and must pass a deployment's health check). The judge's
    endpoint is shown to administrators only, without credentials."""
    try:
        bench = current_benchmark(rt)
    except NotFoundError:
        bench = None
    return {
        "status": "ok",
        "version": __version__,
        "benchmark": bench.name if bench else None,
        "samples": bench.sample_count if bench else None,
        "demo": bench.is_demo if bench else None,
        "benchmarks": rt.hosted,
        "judge": judge_summary(rt.settings, show_endpoint=admin),
    }


@router.get("/consensus", response_model=list[schemas.ConsensusRow])
def consensus_rows(rt: Rt, family: str = "") -> list[dict[str, Any]]:
    """Which model is best across the hosted benchmarks: every aggregation's standings (mean,
    Borda, Kemeny, Plackett-Luce), each with its rank interval. Aggregates only: per-item
    values never leave the server."""
    from medvidbench.server.services.consensus import consensus
    from medvidbench.server.web.pages.consensus import checked_family, rows

    return rows(consensus(rt, checked_family(rt, family)))


@router.get("/benchmarks", response_model=list[schemas.BenchmarkSummary])
def benchmarks(rt: Rt) -> list[dict[str, Any]]:
    """The hosted benchmarks and their current test sets (ground truth is never served)."""
    return [h.summary() for h in catalogue.hosted(rt)]


@router.get("/benchmarks/{slug}", response_model=schemas.BenchmarkDetail)
def benchmark(rt: Rt, slug: str) -> dict[str, Any]:
    """One benchmark: its definition's metadata and its current test set."""
    found = next(h for h in catalogue.hosted(rt) if h.slug == _definition(rt, slug).slug)
    shown = found.definition.presentation
    return {
        **found.summary(),
        "about": shown.about,
        "identity": shown.identity,
        "citation": shown.citation,
        "links": dict(shown.links),
        "licence": shown.licence,
        **metrics(rt, slug),
    }


def metrics(rt: Rt, slug: str | None = None) -> dict[str, Any]:
    """The metric table, tasks and profiles, as the benchmark's definition declares them."""
    bench = _definition(rt, slug)
    return {
        "benchmark": bench.slug,
        "scorer_version": bench.scorer_version,
        "metrics": [{**asdict(m), "group": bench.group_of(m)} for m in bench.metrics],
        "tasks": [asdict(t) for t in bench.tasks],
        "profiles": [{**asdict(p), "variants": dict(p.variants)} for p in bench.profiles],
    }


def board(
    request: Request,
    response: Response,
    rt: Rt,
    kind: str,
    slug: str | None = None,
    format: str = "json",
    download: Annotated[
        bool, Query(description="Send the whole board as a file (JSON; CSV always is).")
    ] = False,
    page: Annotated[int, Query(ge=1, le=1_000_000, description="Page, from 1.")] = 1,
    per_page: Annotated[int, Query(ge=1, le=1000, description="Rows per page.")] = 100,
) -> Response | list[dict[str, Any]]:
    """A ranked board, a page of rows at a time (``X-Total-Count`` and ``Link`` headers give
    the rest); ``?format=csv`` for the whole board as a spreadsheet."""
    slug = _definition(rt, slug).slug
    if format not in ("csv", "json"):
        raise UsageError("format must be json or csv")
    if format == "csv" or download:
        # a file named after the board and the day, e.g. medvidbench-official-2026-11-23.csv
        name = f"{slug}-{kind}-{datetime.now(UTC).date().isoformat()}.{format}"
        return PlainTextResponse(
            export_board(rt, kind, format, slug=slug),
            media_type="text/csv" if format == "csv" else "application/json",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )
    rows = board_rows(rt, kind, slug=slug)
    pages = max(1, -(-len(rows) // per_page))
    response.headers["X-Total-Count"] = str(len(rows))
    # relative references: the request's Host header is the client's to choose (and a cache
    # in front could hand a forged one to everybody)
    links = [
        f'<{_path_with(request, page=n, per_page=per_page)}>; rel="{rel}"'
        for n, rel in ((page + 1, "next"), (page - 1, "prev"), (pages, "last"))
        if 1 <= n <= pages and n != page
    ]
    if links:
        response.headers["Link"] = ", ".join(links)
    return [asdict(r) for r in rows[(page - 1) * per_page : page * per_page]]


def _path_with(request: Request, **params: int) -> str:
    """This request's path and query with ``params`` changed (no scheme, no host)."""
    url = request.url.include_query_params(**params)
    return f"{url.path}?{url.query}"


def entry(rt: Rt, entry_id: deps.DbId, slug: str | None = None) -> dict[str, Any]:
    """One board entry."""
    slug = _definition(rt, slug).slug
    for kind in ("official", "community"):
        for row in board_rows(rt, kind, slug=slug):
            if row.entry_id == entry_id:
                return {"board": kind, **asdict(row)}
    raise NotFoundError(f"no entry {entry_id}")


def compare(
    rt: Rt,
    entries: Annotated[str, Query(description="Comma-separated entry ids (2 to 4).")],
    slug: str | None = None,
) -> dict[str, Any]:
    """Two to four entries side by side."""
    definition = _definition(rt, slug)
    ids, bad = deps.entry_ids(entries.split(","))
    if bad:
        raise UsageError(f"entry ids are whole numbers from 1 to {deps.MAX_ID}; got {bad[0]!r}")
    if not 1 <= len(ids) <= 4:
        raise UsageError("compare 1 to 4 entries: ?entries=3,7")
    rows = {
        r.entry_id: r
        for kind in ("official", "community")
        for r in board_rows(rt, kind, slug=definition.slug)
    }
    missing = [i for i in ids if i not in rows]
    if missing:
        raise NotFoundError(f"no entry {missing[0]}")
    return {
        "benchmark": definition.slug,
        "metrics": [m.key for m in definition.metrics],
        "columns": {m.key: m.column for m in definition.metrics},
        "entries": [
            {
                **asdict(rows[i]),
                # each value on 0-1 with 1 the best, as its metric's scale and direction say
                "normalised": {
                    m.key: m.normalised(rows[i].metrics.get(m.key)) for m in definition.metrics
                },
            }
            for i in ids
        ],
        # each entry after the first minus the first, with its paired 95 % interval
        "differences": [
            {
                "reference": c.reference,
                "other": c.other,
                "note": c.note,
                "metrics": {
                    d.metric: {
                        "difference": d.difference,
                        "interval": list(d.interval) if d.interval else None,
                        "distinguishable": d.distinguishable,
                        "identical": d.identical,
                    }
                    for d in c.differences
                },
            }
            for c in compare_rows(rt, [rows[i] for i in ids], definition.slug)
        ],
    }


async def receive_upload(upload: Any, runtime: Runtime) -> Path:
    """Stream an uploaded file into a private file of the data folder, refusing (413) as soon
    as it passes the size limit. The caller deletes the file when done with it."""
    limit = runtime.settings.max_submission_bytes
    path, size = runtime.incoming_path(), 0
    with storing(path), path.open("wb") as out:
        while chunk := await upload.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise PayloadTooLargeError(f"the file is larger than the limit of {limit:,} bytes")
            out.write(chunk)
    return path


async def create_submission(
    request: Request,
    response: Response,
    rt: Rt,
    user: Annotated[User, Depends(deps.api_user)],
    file: Annotated[UploadFile, File(description="Prediction file (.json or .jsonl).")],
    model_name: Annotated[str, Form()],
    organisation: Annotated[str, Form()] = "",
    model_url: Annotated[str, Form()] = "",
    contact: Annotated[str, Form()] = "",
    frames: Annotated[str, Form()] = "",
    prompting: Annotated[str, Form()] = "",
    revision: Annotated[str, Form()] = "",
    visibility: Annotated[
        str, Form(description="public (on the boards once scored) or private (you only)")
    ] = "public",
    slug: str | None = None,
) -> SubmissionCreated:
    """Upload predictions: checked at once (422 with every problem), then scored."""
    slug = _definition(rt, slug).slug
    received = await receive_upload(file, rt)
    info = {
        k: v for k, v in (("frames", frames), ("prompting", prompting), ("revision", revision)) if v
    }
    try:
        # Validation, hashing and storing take a while for a large file: off the event loop,
        # so that every other request is answered meanwhile.
        accepted = await run_in_threadpool(
            accept,
            rt,
            user,
            received,
            model_name,
            organisation=organisation,
            model_url=model_url or None,
            contact=contact or None,
            settings=info,
            filename=file.filename or "",
            benchmark=slug,
            visibility=visibility,
        )
    finally:
        received.unlink(missing_ok=True)
    sub = accepted.submission
    # what was left when it was accepted (two uploads at once never both report the same)
    response.headers.update(rate_limit_headers(accepted.quota))
    return SubmissionCreated(
        id=sub.id,
        status=sub.status,
        url=f"/submissions/{sub.id}",
        visibility=sub.visibility,
        warnings=events.warnings(rt, sub.id),
        note=None if accepted.queued else QUEUE_DOWN,
    )


def rate_limit_headers(windows: list[Any]) -> dict[str, str]:
    """``X-RateLimit-*`` of the tightest window that has a limit (none without quotas)."""
    limited = [w for w in windows if w.limit]
    if not limited:
        return {}
    tight = min(limited, key=lambda w: w.remaining)
    headers = {
        "X-RateLimit-Limit": str(tight.limit),
        "X-RateLimit-Remaining": str(tight.remaining),
        "X-RateLimit-Window": tight.period,
    }
    if tight.resets_at is not None:
        headers["X-RateLimit-Reset"] = str(int(tight.resets_at.timestamp()))
    return headers


def my_quota(
    rt: Rt, user: Annotated[User, Depends(deps.api_user)], slug: str | None = None
) -> dict[str, Any]:
    """Your (and your team's) submissions left on a benchmark, per rolling window, and when
    the next one frees; a limit of 0 means no limit."""
    definition = _definition(rt, slug)
    return {
        "benchmark": definition.slug,
        "windows": [w.to_dict() for w in quota(rt, user, definition.slug)],
    }


@router.get("/submissions", response_model=list[schemas.SubmissionListed])
def my_submissions(rt: Rt, user: Annotated[User, Depends(deps.api_user)]) -> list[dict[str, Any]]:
    """Your submissions, newest first."""
    return [
        {
            "id": s.id,
            "model_name": s.model_name,
            "status": s.status,
            "created_at": s.created_at.isoformat(),
            "error": s.error,
        }
        for s in list_submissions(rt, user)
    ]


@router.post("/submissions/{submission_id}/visibility", response_model=schemas.VisibilityChanged)
def change_visibility(
    rt: Rt,
    submission_id: deps.DbId,
    user: Annotated[User, Depends(deps.api_user)],
    visibility: Annotated[str, Form(description="public, private or withdrawn (final)")],
) -> dict[str, Any]:
    """Publish, unpublish or withdraw your submission (withdrawn: off every board for good)."""
    set_visibility(rt, user, submission_id, visibility)
    return {"id": submission_id, "visibility": visibility}


@router.get("/submissions/{submission_id}", response_model=schemas.SubmissionPublic)
def submission(
    request: Request, rt: Rt, submission_id: deps.DbId, evaluation: deps.EvaluationId = None
) -> dict[str, Any]:
    """Status, metrics, per-task and per-dataset results, judge provenance; every evaluation
    stored (re-scores included) and the validation warnings' texts (submitter and staff)."""
    return submission_view(rt, submission_id, deps.current_user(request), evaluation)


# Benchmark-scoped routes, and the single-benchmark paths of earlier versions (same handlers,
# the default benchmark), kept so that existing clients and links do not break.
_SCOPED: tuple[tuple[str, str, Any, dict[str, Any]], ...] = (
    ("/metrics", "GET", metrics, {"response_model": schemas.MetricTable}),
    (
        "/boards/{kind}",
        "GET",
        board,
        {
            "response_model": list[schemas.BoardRowPublic],
            "responses": {200: {"content": {"text/csv": {}}}},  # ?format=csv
        },
    ),
    ("/entries/{entry_id}", "GET", entry, {"response_model": schemas.BoardEntry}),
    ("/compare", "GET", compare, {"response_model": schemas.Comparison}),
    ("/quota", "GET", my_quota, {"response_model": schemas.Quota}),
    (
        "/submissions",
        "POST",
        create_submission,
        {"status_code": 202, "response_model": schemas.SubmissionCreated},
    ),
)
for _path, _method, _endpoint, _options in _SCOPED:
    router.add_api_route("/benchmarks/{slug}" + _path, _endpoint, methods=[_method], **_options)
    router.add_api_route(
        _path,
        _endpoint,
        methods=[_method],
        deprecated=True,
        operation_id=f"default_benchmark_{_endpoint.__name__}",
        **_options,
    )
