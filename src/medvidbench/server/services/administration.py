"""What the admin area shows: accounts, recent submissions, official entries that show
nowhere, and the audit log a page at a time (admins only)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session, selectinload

from medvidbench.server.lifecycle import ON_BOARD, Status
from medvidbench.server.roles import Role
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.accounts import require_role
from medvidbench.server.store.models import (
    ApiToken,
    AuditLog,
    Board,
    Entry,
    Submission,
    TestSet,
    User,
)

AUDIT_PAGE = 25


@dataclass(slots=True)
class AdminOverview:
    users: list[User]
    submissions: list[Submission]
    log: list[AuditLog]
    has_tokens: bool
    # the audit log's page shown (1: the newest lines) and how many pages it has
    log_page: int = 1
    log_pages: int = 1
    # official entries whose submission is withdrawn, private or hidden: on no board's page,
    # so removable only from here
    off_board: list[Entry] | None = None


def overview(
    runtime: Runtime,
    actor: User,
    submissions: int = 200,
    log_page: int = 1,
    slug: str | None = None,
) -> AdminOverview:
    """Every account, the newest submissions of benchmark ``slug`` (every benchmark's when
    None; deleted ones left out, their teams loaded), one page of audit lines (newest first)
    and the official entries that show nowhere."""
    require_role(actor, Role.ADMIN)
    newest = (
        select(Submission)
        .options(selectinload(Submission.team))
        .where(Submission.status != Status.DELETED)
        .order_by(Submission.id.desc())
        .limit(submissions)
    )
    if slug is not None:
        newest = newest.join(TestSet, TestSet.id == Submission.benchmark_id).where(
            TestSet.slug == slug
        )
    with runtime.sessions() as session:
        lines = int(session.scalar(select(func.count()).select_from(AuditLog)) or 0)
        pages = max(1, -(-lines // AUDIT_PAGE))
        log_page = min(max(1, log_page), pages)
        return AdminOverview(
            users=list(session.scalars(select(User).order_by(User.id))),
            submissions=list(session.scalars(newest)),
            log=list(
                session.scalars(
                    select(AuditLog)
                    .order_by(AuditLog.id.desc())
                    .offset((log_page - 1) * AUDIT_PAGE)
                    .limit(AUDIT_PAGE)
                )
            ),
            has_tokens=session.scalar(select(ApiToken.id).limit(1)) is not None,
            log_page=log_page,
            log_pages=pages,
            off_board=_official_off_board(session, slug),
        )


def _official_off_board(session: Session, slug: str | None) -> list[Entry]:
    query = (
        select(Entry)
        .join(Board, Board.id == Entry.board_id)
        .join(TestSet, TestSet.id == Board.benchmark_id)
        .join(Submission, Submission.id == Entry.submission_id)
        .options(selectinload(Entry.submission))
        .where(
            Board.kind == "official",
            TestSet.is_current,
            or_(
                Submission.hidden,
                Submission.visibility != "public",
                Submission.status.not_in(ON_BOARD),  # its judging failed
            ),
        )
        .order_by(Entry.id)
    )
    if slug is not None:
        query = query.where(TestSet.slug == slug)
    return list(session.scalars(query))
