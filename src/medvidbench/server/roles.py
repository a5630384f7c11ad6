"""What an account may do: its role, stored as the enum's value (a short string)."""

from __future__ import annotations

from enum import StrEnum

from medvidbench.core.errors import UsageError


class Role(StrEnum):
    """An account's role; an admin holds every role."""

    ADMIN = "admin"
    MAINTAINER = "maintainer"
    SUBMITTER = "submitter"


# The roles that see every submission's diagnostics and every team's work.
STAFF = frozenset({Role.ADMIN, Role.MAINTAINER})


def role_named(name: str) -> Role:
    """The role called ``name``.

    Raises:
        UsageError: for a name that is no role, naming the ones there are.
    """
    try:
        return Role(name)
    except ValueError:
        raise UsageError(
            f"unknown role {name!r}; expected one of {', '.join(r.value for r in Role)}"
        ) from None
