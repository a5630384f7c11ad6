"""Who sees a submission on the boards: its submitter's choice (public, private, withdrawn),
an administrator's reversible hiding, and where a private run would rank."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from medvidbench.core.errors import ConflictError, NotFoundError, UsageError
from medvidbench.server.lifecycle import Status
from medvidbench.server.roles import STAFF, Role
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import events
from medvidbench.server.services.accounts import require_role
from medvidbench.server.services.audit import audit
from medvidbench.server.services.events import Kind
from medvidbench.server.services.names import held_publicly
from medvidbench.server.store import board_cache
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import Submission, User


def set_hidden(runtime: Runtime, actor: User, submission_id: int, hidden: bool) -> None:
    """Take a submission off every board, or put it back (admins; audited and logged)."""
    require_role(actor, Role.ADMIN)
    with transaction(runtime.sessions) as session:
        sub = session.get(Submission, submission_id)
        if sub is None or sub.status == Status.DELETED:
            raise NotFoundError(f"no submission {submission_id}")
        sub.hidden = hidden
        action = "hide" if hidden else "unhide"
        audit(session, actor, f"submission.{action}", f"submission:{sub.id}")
        events.record(
            session,
            sub.id,
            Kind.HIDDEN if hidden else Kind.SHOWN,
            "hidden from the boards by an administrator"
            if hidden
            else "back on the boards (an administrator)",
        )
        board_cache.bump(session, sub.benchmark_id)


VISIBILITY_CHANGES = {"public": "publish", "private": "unpublish", "withdrawn": "withdraw"}
_VISIBILITY_EVENTS = {
    "public": (Kind.PUBLISHED, "made public: on the boards"),
    "private": (Kind.UNPUBLISHED, "made private: off the boards, seen by its submitter and staff"),
    "withdrawn": (Kind.WITHDRAWN, "withdrawn by its submitter: off every board for good"),
}


def set_visibility(runtime: Runtime, user: User, submission_id: int, visibility: str) -> None:
    """The submitter (or staff) publishes, unpublishes or withdraws a submission. Withdrawn is
    final: off every board for good, the record kept for the audit trail."""
    if visibility not in VISIBILITY_CHANGES:
        raise UsageError(
            f"visibility must be one of {', '.join(VISIBILITY_CHANGES)}; got {visibility!r}"
        )
    with transaction(runtime.sessions) as session:
        # Locked (SELECT ... FOR UPDATE on PostgreSQL; SQLite runs one writer at a time): a
        # withdrawal and a publish sent at once then run one after the other, and the second
        # sees the first's result, so a withdrawal is never undone.
        sub = session.get(Submission, submission_id, with_for_update=True)
        staff = user.role in STAFF
        if sub is None or sub.status == Status.DELETED or (not staff and sub.user_id != user.id):
            raise NotFoundError(f"no submission {submission_id}")
        if sub.visibility == "withdrawn":
            raise ConflictError("this submission was withdrawn; a withdrawal is final")
        if sub.status == Status.REJECTED:
            raise ConflictError(
                "this submission was rejected: it is on no board, whatever its visibility"
            )
        if sub.visibility == visibility:
            return
        if visibility == "public" and held_publicly(
            session, sub.benchmark_id, sub.model_key, sub.id
        ):
            raise _name_taken(sub.model_name)
        sub.visibility = visibility
        try:
            session.flush()  # a public name is unique: two publishing at once meet here
        except IntegrityError:
            raise _name_taken(sub.model_name) from None
        audit(session, user, f"submission.{VISIBILITY_CHANGES[visibility]}", f"submission:{sub.id}")
        events.record(session, sub.id, *_VISIBILITY_EVENTS[visibility])
        board_cache.bump(session, sub.benchmark_id)


def _name_taken(name: str) -> ConflictError:
    return ConflictError(
        f"the model name {name!r} is now taken on the boards by another submission, so this "
        "run cannot be published under it; withdraw it and submit the file again under "
        "another name"
    )
