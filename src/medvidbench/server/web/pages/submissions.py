"""A submission's page: status, metrics, per-task and per-dataset results (never ground truth)."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
)

from medvidbench.core.errors import NotFoundError, UsageError
from medvidbench.server.services.details import submission_view
from medvidbench.server.services.items import BUCKETS, attribution, item_image, item_page
from medvidbench.server.services.visibility import set_visibility
from medvidbench.server.web.deps import DbId, EvaluationId, check_csrf, current_user
from medvidbench.server.web.pages.common import see
from medvidbench.server.web.render import page

router = APIRouter(include_in_schema=False)


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(
    request: Request, submission_id: DbId, evaluation: EvaluationId = None
) -> Response:
    rt = request.app.state.runtime
    view = submission_view(rt, submission_id, current_user(request), evaluation)
    definition = rt.definition(view["benchmark"])
    # the per-dataset table: only when there are datasets to tell apart, and only the metrics
    # a dataset has a value of (MedSG-Bench's one dataset would be a row of 34 empty cells)
    datasets = view["per_dataset"]
    by_dataset = [
        m for m in definition.metrics if any(d.get(m.key) is not None for d in datasets.values())
    ]
    return page(
        request,
        "submission.html",
        sub=view,
        metrics=definition.metrics,
        dataset_metrics=by_dataset if len(datasets) > 1 else [],
        definition=definition,
    )


@router.get("/submissions/{submission_id}/report.json")
def submission_report(
    request: Request, submission_id: DbId, evaluation: EvaluationId = None
) -> Response:
    """The page's record as a JSON file: the evaluation shown, every evaluation, warnings, log."""
    view = submission_view(
        request.app.state.runtime, submission_id, current_user(request), evaluation
    )
    name = f"submission-{view['id']}-{view['profile'] or 'unscored'}.json"
    return JSONResponse(
        view,
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Cache-Control": "no-store",
        },
    )


@router.post("/submissions/{submission_id}/visibility")
async def visibility_form(request: Request, submission_id: DbId) -> Response:
    """The submitter publishes, unpublishes or withdraws their submission from its page."""
    user = current_user(request)
    if user is None:
        return see(f"/login?next=/submissions/{submission_id}")
    form = await request.form()
    check_csrf(request, form)
    wanted = str(form.get("visibility", ""))
    if wanted == "withdrawn" and form.get("confirm") != "yes":
        raise UsageError("tick the confirmation box to withdraw: a withdrawal is final")
    set_visibility(request.app.state.runtime, user, submission_id, wanted)
    request.session["notice_text"] = {
        "public": "Your submission is public: it is on the boards.",
        "private": "Your submission is private: it is off the boards.",
        "withdrawn": "Your submission is withdrawn: off every board for good.",
    }[wanted]
    return see(f"/submissions/{submission_id}")


@router.get("/submissions/{submission_id}/items", response_class=HTMLResponse)
def items_page(
    request: Request,
    submission_id: DbId,
    task: str = "",
    bucket: str = "",
    failed: str = "",
    page_number: int = Query(1, alias="page", ge=1, le=1_000_000),
) -> Response:
    """Per-item results (public-label benchmarks only): answer, score, boxes."""
    rt = request.app.state.runtime
    view = item_page(
        rt, submission_id, current_user(request), task, bucket, failed == "1", page_number
    )
    return page(
        request,
        "items.html",
        slug=view.slug,
        view=view,
        buckets=list(BUCKETS),
        attributed=attribution(rt, view.slug) is not None,
    )


@router.get("/b/{slug}/item-image")
def item_image_file(request: Request, slug: str, key: str = "") -> Response:
    """A public-label test item's target image, from the operator's image folder."""
    path, kind = item_image(request.app.state.runtime, slug, key)
    return FileResponse(path, media_type=kind, headers={"Cache-Control": "public, max-age=3600"})


@router.get("/b/{slug}/attribution", response_class=PlainTextResponse)
def image_attribution(request: Request, slug: str) -> Response:
    """The attribution list of a benchmark's images, as the operator supplied it."""
    text = attribution(request.app.state.runtime, slug)
    if text is None:
        raise NotFoundError("no attribution list for this benchmark's images")
    return PlainTextResponse(text)
