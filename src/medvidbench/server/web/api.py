"""The REST API (``/api/v1``), described by the app's OpenAPI document."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.responses import PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from medvidbench import __version__
from medvidbench.core.config import judge_summary
from medvidbench.core.errors import NotFoundError, UsageError
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.leaderboards import board_rows, export_board
from medvidbench.server.services.submissions import (
    current_benchmark,
    list_submissions,
    submission_view,
    submit,
)
from medvidbench.server.store.models import User
from medvidbench.server.web import deps
from medvidbench.server.web.limits import PayloadTooLargeError
from medvidbench.server.web.schemas import SubmissionCreated

router = APIRouter(tags=["leaderboard"])
Rt = Annotated[Runtime, Depends(deps.runtime)]
CHUNK = 1 << 20


@router.get("/health")
def health(rt: Rt) -> dict[str, Any]:
    """Liveness and what this server holds."""
    bench = current_benchmark(rt)
    judge = judge_summary(rt.settings)
    return {
        "status": "ok",
        "version": __version__,
        "benchmark": bench.name,
        "samples": bench.sample_count,
        "demo": bench.is_demo,
        "judge": judge,
    }


@router.get("/benchmarks")
def benchmarks(rt: Rt) -> list[dict[str, Any]]:
    """The current benchmark (its ground truth is never served)."""
    b = current_benchmark(rt)
    return [
        {
            "id": b.id,
            "name": b.name,
            "sha256": b.gt_sha256,
            "samples": b.sample_count,
            "tasks": b.task_counts,
            "demo": b.is_demo,
        }
    ]


@router.get("/metrics")
def metrics(rt: Rt) -> dict[str, Any]:
    """The metric table, tasks and profiles, as the benchmark's definition declares them."""
    bench = rt.benchmark
    return {
        "benchmark": bench.slug,
        "scorer_version": bench.scorer_version,
        "metrics": [{**asdict(m), "group": bench.group_of(m)} for m in bench.metrics],
        "tasks": [asdict(t) for t in bench.tasks],
        "profiles": [asdict(p) for p in bench.profiles],
    }


@router.get("/boards/{kind}", response_model=None)
def board(
    request: Request,
    response: Response,
    rt: Rt,
    kind: str,
    format: str = "json",
    page: Annotated[int, Query(ge=1, le=1_000_000, description="Page, from 1.")] = 1,
    per_page: Annotated[int, Query(ge=1, le=1000, description="Rows per page.")] = 100,
) -> Response | list[dict[str, Any]]:
    """A ranked board, a page of rows at a time (``X-Total-Count`` and ``Link`` headers give
    the rest); ``?format=csv`` for the whole board as a spreadsheet."""
    if format == "csv":
        return PlainTextResponse(
            export_board(rt, kind, "csv"),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="medvidbench-{kind}.csv"'},
        )
    if format != "json":
        raise UsageError("format must be json or csv")
    rows = board_rows(rt, kind)
    pages = max(1, -(-len(rows) // per_page))
    response.headers["X-Total-Count"] = str(len(rows))
    links = [
        f'<{request.url.include_query_params(page=n, per_page=per_page)}>; rel="{rel}"'
        for n, rel in ((page + 1, "next"), (page - 1, "prev"), (pages, "last"))
        if 1 <= n <= pages and n != page
    ]
    if links:
        response.headers["Link"] = ", ".join(links)
    return [asdict(r) for r in rows[(page - 1) * per_page : page * per_page]]


@router.get("/entries/{entry_id}")
def entry(rt: Rt, entry_id: deps.DbId) -> dict[str, Any]:
    for kind in ("official", "community"):
        for row in board_rows(rt, kind):
            if row.entry_id == entry_id:
                return {"board": kind, **asdict(row)}
    raise NotFoundError(f"no entry {entry_id}")


@router.get("/compare")
def compare(
    rt: Rt, entries: Annotated[str, Query(description="Comma-separated entry ids (2 to 4).")]
) -> dict[str, Any]:
    """Two to four entries side by side."""
    ids = [int(x) for x in entries.split(",") if x.strip().isascii() and x.strip().isdigit()]
    if not 1 <= len(ids) <= 4:
        raise UsageError("compare 1 to 4 entries: ?entries=3,7")
    rows = {r.entry_id: r for kind in ("official", "community") for r in board_rows(rt, kind)}
    missing = [i for i in ids if i not in rows]
    if missing:
        raise NotFoundError(f"no entry {missing[0]}")
    return {
        "metrics": [m.key for m in rt.benchmark.metrics],
        "columns": {m.key: m.column for m in rt.benchmark.metrics},
        "entries": [
            {
                **asdict(rows[i]),
                # each value on 0-1 with 1 the best, as its metric's scale and direction say
                "normalised": {
                    m.key: m.normalised(rows[i].metrics.get(m.key)) for m in rt.benchmark.metrics
                },
            }
            for i in ids
        ],
    }


async def receive_upload(upload: Any, runtime: Runtime) -> Path:
    """Stream an uploaded file into a private file of the data folder, refusing (413) as soon
    as it passes the size limit. The caller deletes the file when done with it."""
    limit = runtime.settings.max_submission_bytes
    path, size = runtime.incoming_path(), 0
    try:
        with path.open("wb") as out:
            while chunk := await upload.read(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLargeError(
                        f"the file is larger than the limit of {limit:,} bytes"
                    )
                out.write(chunk)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


@router.post("/submissions", status_code=202, response_model=SubmissionCreated)
async def create_submission(
    request: Request,
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
) -> SubmissionCreated:
    """Upload predictions: checked at once (422 with every problem), then scored."""
    received = await receive_upload(file, rt)
    info = {
        k: v for k, v in (("frames", frames), ("prompting", prompting), ("revision", revision)) if v
    }
    try:
        # Validation, hashing and storing take a while for a large file: off the event loop,
        # so that every other request is answered meanwhile.
        sub = await run_in_threadpool(
            submit,
            rt,
            user,
            received,
            model_name,
            organisation=organisation,
            model_url=model_url or None,
            contact=contact or None,
            settings=info,
            filename=file.filename or "",
        )
    finally:
        received.unlink(missing_ok=True)
    return SubmissionCreated(id=sub.id, status=sub.status, url=f"/submissions/{sub.id}")


@router.get("/submissions")
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


@router.get("/submissions/{submission_id}")
def submission(request: Request, rt: Rt, submission_id: deps.DbId) -> dict[str, Any]:
    """Status, metrics, per-task and per-dataset results, judge provenance."""
    return submission_view(rt, submission_id, deps.current_user(request))
