"""API shapes (the request and response bodies of ``/api/v1``)."""

from __future__ import annotations

from pydantic import BaseModel


class SubmissionCreated(BaseModel):
    """An accepted upload: where to follow it."""

    id: int
    status: str
    url: str
