"""What the admin area shows: accounts, recent submissions and the audit log (admins only)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from medvidbench.server.lifecycle import Status
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.accounts import require_role
from medvidbench.server.store.models import ApiToken, AuditLog, Submission, User


@dataclass(slots=True)
class AdminOverview:
    users: list[User]
    submissions: list[Submission]
    log: list[AuditLog]
    has_tokens: bool


def overview(
    runtime: Runtime, actor: User, submissions: int = 200, log_lines: int = 100
) -> AdminOverview:
    """Every account, the newest submissions (deleted ones left out) and audit lines."""
    require_role(actor, "admin")
    with runtime.sessions() as session:
        return AdminOverview(
            users=list(session.scalars(select(User).order_by(User.id))),
            submissions=list(
                session.scalars(
                    select(Submission)
                    .where(Submission.status != Status.DELETED)
                    .order_by(Submission.id.desc())
                    .limit(submissions)
                )
            ),
            log=list(
                session.scalars(select(AuditLog).order_by(AuditLog.id.desc()).limit(log_lines))
            ),
            has_tokens=session.scalar(select(ApiToken.id).limit(1)) is not None,
        )
