"""What several page modules share."""

from __future__ import annotations

from typing import Any

from fastapi.responses import RedirectResponse

from medvidbench.core.errors import PermissionDeniedError
from medvidbench.server.store.models import User


def me(session: Any, user: User) -> User:
    """The logged-in user's row in this session."""
    row = session.get(User, user.id)
    if row is None:
        raise PermissionDeniedError("your account no longer exists")
    return row  # type: ignore[no-any-return]


def see(url: str) -> RedirectResponse:
    """After a form: show ``url`` (303, so a reload does not post again)."""
    return RedirectResponse(url, status_code=303)
