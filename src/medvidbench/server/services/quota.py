"""Quotas: how many submissions a submitter (and their team) may make per benchmark.

A submission counts against its submitter and against their team, per benchmark, in two rolling
windows (a day and 30 days). Rejected and failed submissions never count.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select

from medvidbench.core.errors import AccountGoneError, QuotaExceededError
from medvidbench.server.lifecycle import NOT_COUNTED
from medvidbench.server.runtime import Runtime
from medvidbench.server.store.db import aware
from medvidbench.server.store.models import Submission, Team, TestSet, User


@dataclass(frozen=True, slots=True)
class QuotaWindow:
    """One rolling quota window of a submitter (and their team) on one benchmark.

    Attributes:
        period: ``day`` or ``30 days``.
        limit: Submissions allowed in the window (0: no limit; the others are then 0/None).
        used: Submissions counted in it (rejected and failed ones never count).
        remaining: ``limit - used``, at least 0.
        resets_at: When the oldest counted submission leaves the window, freeing one (None when
            nothing is counted).
    """

    period: str
    limit: int
    used: int
    remaining: int
    resets_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "period": self.period,
            "limit": self.limit,
            "used": self.used,
            "remaining": self.remaining,
            "resets_at": self.resets_at.isoformat(timespec="seconds") if self.resets_at else None,
        }


def quota_windows(session: Any, runtime: Runtime, user: User, slug: str) -> list[QuotaWindow]:
    """A submission counts against its submitter and against their team, per benchmark: a
    member cannot get fresh quota by leaving or founding a team, nor a team by recruiting
    accounts beyond it. The windows roll: a submission frees its place a day (30 days) after
    it was made."""
    now = datetime.now(UTC)
    same_benchmark = Submission.benchmark_id.in_(select(TestSet.id).where(TestSet.slug == slug))
    owner = Submission.user_id == user.id
    if user.team_id is not None:
        owner = or_(owner, Submission.team_id == user.team_id)
    out = []
    for limit, days, period in (
        (runtime.settings.quota_per_day, 1, "day"),
        (runtime.settings.quota_per_month, 30, "30 days"),
    ):
        if not limit:
            out.append(QuotaWindow(period, 0, 0, 0, None))
            continue
        since = now - timedelta(days=days)
        used, oldest = session.execute(
            select(func.count(), func.min(Submission.created_at)).where(
                owner,
                same_benchmark,
                Submission.status.not_in(NOT_COUNTED),
                Submission.created_at >= since,
            )
        ).one()
        resets = aware(oldest) + timedelta(days=days) if oldest is not None else None
        out.append(QuotaWindow(period, limit, int(used), max(0, limit - int(used)), resets))
    return out


def quota(runtime: Runtime, user: User, slug: str | None = None) -> list[QuotaWindow]:
    """The submitter's quota windows on a benchmark (default: the default benchmark)."""
    definition = runtime.definition(slug)
    with runtime.sessions() as session:
        holder = session.get(User, user.id) or user
        return quota_windows(session, runtime, holder, definition.slug)


def lock_holders(session: Any, user: User) -> User:
    """Lock the rows whose quota this submission spends: the user, then their team.

    On PostgreSQL two members of one team submitting at once then count one after the other
    (SELECT ... FOR UPDATE on the team row); SQLite runs one writing transaction at a time
    anyway. The user's row is re-read under the lock: its team is the one charged.
    """
    row = session.get(User, user.id, with_for_update=True)
    if row is None:
        raise AccountGoneError()
    if row.team_id is not None:
        session.get(Team, row.team_id, with_for_update=True)
        session.refresh(row, with_for_update=True)  # the team may have changed meanwhile
    return row  # type: ignore[no-any-return]


def check_quota(session: Any, runtime: Runtime, user: User, slug: str) -> None:
    """Refuse a submission beyond either window's limit (naming when the next is possible).

    Raises:
        QuotaExceededError: a window with a limit has nothing left.
    """
    for window in quota_windows(session, runtime, user, slug):
        if window.limit and window.remaining <= 0:
            who = "your team has" if user.team_id is not None else "you have"
            when = window.resets_at.strftime("%Y-%m-%d %H:%M UTC") if window.resets_at else "soon"
            raise QuotaExceededError(
                f"{who} used {window.limit} submissions per {window.period}, the limit "
                f"(rejected and failed submissions do not count); the next one is possible "
                f"from {when}",
                retry_after=window.resets_at,
            )
