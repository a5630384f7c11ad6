"""A submission's page: status, metrics, per-task and per-dataset results (never ground truth)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from medvidbench.server.services.submissions import submission_view
from medvidbench.server.web.deps import DbId, current_user
from medvidbench.server.web.render import page

router = APIRouter(include_in_schema=False)


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(request: Request, submission_id: DbId) -> Response:
    rt = request.app.state.runtime
    view = submission_view(rt, submission_id, current_user(request))
    definition = rt.definition(view["benchmark"])
    return page(
        request, "submission.html", sub=view, metrics=definition.metrics, definition=definition
    )
