"""API shapes (the request and response bodies of ``/api/v1``)."""

from __future__ import annotations

from pydantic import BaseModel


class SubmissionCreated(BaseModel):
    """An accepted upload: where to follow it, who sees it, and what validation warned about."""

    id: int
    status: str
    url: str
    visibility: str = "public"
    warnings: list[str] = []
