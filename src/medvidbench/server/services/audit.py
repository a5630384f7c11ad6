"""The audit log: who did what to which record, appended in the transaction that did it."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from medvidbench.server.runtime import Runtime
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import AuditLog, User


def audit(
    session: Session, actor: User | None, action: str, target: str = "", **detail: Any
) -> None:
    """Append one line to the audit log (in the caller's transaction)."""
    session.add(
        AuditLog(
            actor_id=actor.id if actor else None,
            actor_name=actor.username if actor else "system",
            action=action,
            target=target,
            detail=detail,
        )
    )


def record(runtime: Runtime, actor: User | None, action: str, target: str, **detail: Any) -> None:
    """Write one audit line in a transaction of its own."""
    with transaction(runtime.sessions) as session:
        audit(session, actor, action, target, **detail)
