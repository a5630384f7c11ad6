"""What several page modules share."""

from __future__ import annotations

from fastapi.responses import RedirectResponse


def see(url: str) -> RedirectResponse:
    """After a form: show ``url`` (303, so a reload does not post again)."""
    return RedirectResponse(url, status_code=303)
