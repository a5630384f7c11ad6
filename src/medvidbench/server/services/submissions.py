"""Submissions: accept a prediction file, check it at once, queue it; list, show, delete.

Lifecycle: ``queued -> scoring -> scored -> judging -> complete``, or ``rejected`` (the file is
invalid: nothing is stored but the reason) or ``failed`` (our fault, after retries; the reason is
shown). Rejected and failed submissions do not count against quotas and free their model name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import case, func, or_, select
from sqlalchemy.exc import IntegrityError

from medvidbench.core.config import judge_wanted
from medvidbench.core.display import count
from medvidbench.core.errors import (
    AccountGoneError,
    ConflictError,
    InvalidSubmissionError,
    NotFoundError,
    PermissionDeniedError,
    Problem,
    QueueUnavailableError,
    QuotaExceededError,
    UsageError,
)
from medvidbench.core.statistics import public
from medvidbench.server import checkpoints
from medvidbench.server.lifecycle import FINAL, NOT_COUNTED, ON_BOARD, PRIVATE, Status, timeline
from medvidbench.server.roles import STAFF, Role
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import events
from medvidbench.server.services.accounts import require_role
from medvidbench.server.services.audit import audit
from medvidbench.server.services.boards import would_rank
from medvidbench.server.services.names import held_publicly
from medvidbench.server.services.teams import check_organisation
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.store import board_cache
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import Entry, Submission, Team, TestSet, User

log = logging.getLogger("medvidbench.server.submissions")

MAX_NAME = 120
MAX_SETTINGS = 20


def model_key(name: str) -> str:
    """Model names are unique per board regardless of case and spacing."""
    return " ".join(name.split()).casefold()


def clean_url(url: str | None) -> str | None:
    """An http(s) URL as given, or None; anything else is refused."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > 500:
        raise UsageError("the model URL must be an http:// or https:// address")
    return url.strip()


def _clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name or len(name) > MAX_NAME or any(ord(c) < 32 for c in name):
        raise UsageError(f"a model name has 1 to {MAX_NAME} printable characters")
    return name


def _lock_quota_holders(session: Any, user: User) -> User:
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
        if oldest is not None and oldest.tzinfo is None:
            oldest = oldest.replace(tzinfo=UTC)  # SQLite hands times back without their zone
        resets = oldest + timedelta(days=days) if oldest is not None else None
        out.append(QuotaWindow(period, limit, int(used), max(0, limit - int(used)), resets))
    return out


def quota(runtime: Runtime, user: User, slug: str | None = None) -> list[QuotaWindow]:
    """The submitter's quota windows on a benchmark (default: the default benchmark)."""
    definition = runtime.definition(slug)
    with runtime.sessions() as session:
        holder = session.get(User, user.id) or user
        return quota_windows(session, runtime, holder, definition.slug)


def _check_quota(session: Any, runtime: Runtime, user: User, slug: str) -> None:
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


@dataclass(frozen=True, slots=True)
class Accepted:
    """An accepted upload.

    Attributes:
        submission: The stored submission (status ``queued``).
        quota: The submitter's quota windows, read in the transaction that accepted it (two
            uploads at once each see the other when it committed first).
        queued: False when the job queue could not be reached: the submission is stored and
            the reaper queues it once the queue is back (its log says so).
    """

    submission: Submission
    quota: list[QuotaWindow]
    queued: bool = True


def submit(
    runtime: Runtime, user: User, data: bytes | Path, model_name: str, **options: Any
) -> Submission:
    """:func:`accept`, for callers that need only the submission."""
    return accept(runtime, user, data, model_name, **options).submission


def accept(
    runtime: Runtime,
    user: User,
    data: bytes | Path,
    model_name: str,
    *,
    organisation: str = "",
    model_url: str | None = None,
    contact: str | None = None,
    settings: dict[str, Any] | None = None,
    filename: str = "",
    benchmark: str | None = None,
    visibility: str = "public",
) -> Accepted:
    """Check a prediction file at once and queue it for scoring on ``benchmark`` (a slug;
    None: the default benchmark).

    With the job queue down the submission is stored all the same (``queued`` false): the
    reaper of any worker queues it once the queue is back, so the submitter keeps its id and
    its place, and never has to upload it again.

    Raises:
        InvalidSubmissionError: the file is invalid (every problem listed; a rejected record is
            kept with the reason, the file is not).
        ConflictError: the model name is taken, or the same file was submitted before.
        QuotaExceededError: the team has no submissions left for the period.
    """
    require_role(user, Role.SUBMITTER, Role.MAINTAINER)
    if visibility not in ("public", "private"):
        raise UsageError(f"visibility must be public or private; got {visibility!r}")
    if not user.approved:
        raise PermissionDeniedError(
            "your account waits for an administrator's approval; you can submit once approved"
        )
    name, url = _clean_name(model_name), clean_url(model_url)
    info = {str(k)[:40]: str(v)[:200] for k, v in list((settings or {}).items())[:MAX_SETTINGS]}
    definition = runtime.definition(benchmark)
    bench = current_benchmark(runtime, definition.slug)
    gt = runtime.ground_truth(bench.gt_sha256, bench.slug)
    size = len(data) if isinstance(data, bytes) else data.stat().st_size
    if size > runtime.settings.max_submission_bytes:
        raise UsageError(
            f"the file is {size:,} bytes, over the limit of "
            f"{runtime.settings.max_submission_bytes:,}"
        )
    kept = runtime.incoming_path()  # the valid file's matched submission, for the score step
    try:
        report = runtime.upload_checker.check(
            definition,
            data,
            gt,
            runtime.test_set_file(bench.gt_sha256),
            bench.gt_sha256,
            filename,
            keep=kept,
        )
    except BaseException:
        kept.unlink(missing_ok=True)
        raise
    base = {
        "benchmark_id": bench.id,
        "user_id": user.id,
        "team_id": user.team_id,
        "model_name": name,
        "model_key": model_key(name),
        "model_url": url,
        "contact": (contact or "")[:200] or None,
        "settings": info,
        "organisation": " ".join(organisation.split())[:120],
        "file_sha256": report.sha256,
        "file_size": size,
        "record_count": report.records,
    }
    if report.ok and definition.check_options is not None:
        problem = definition.check_options(report.options, definition.profile())
        if problem is not None:  # the board's profile could not score it: refuse it now
            report.errors.add(Problem("bad-option", problem))
    if runtime.settings.refuse_order_only:
        report.refuse_order_only()
    if not report.ok:
        kept.unlink(missing_ok=True)
        with transaction(runtime.sessions) as session:
            reason = "; ".join(p.message for p in report.errors.items[:5])
            rejected = Submission(
                **base, status=Status.REJECTED, error=reason[:4000], verdict="invalid"
            )
            session.add(rejected)
            session.flush()
            events.record(session, rejected.id, "received", _received(report, size))
            audit(
                session,
                user,
                "submission.rejected",
                f"submission:{rejected.id}",
                model=name,
                problems=len(report.errors),
            )
            events.record(
                session,
                rejected.id,
                "rejected",
                f"invalid: {len(report.errors):,} problem(s); the first: {reason[:600]}",
            )
        raise InvalidSubmissionError(report.errors, filename)
    # Compressed and written before the transaction, which then only puts it in place (renames
    # it in the folder store; inserts its compressed parts in the database store, in the same
    # transaction as its row): the embedded database (SQLite's single writer) is never held
    # while a large file is compressed.
    try:
        staged = runtime.stage(data)
    except BaseException:
        kept.unlink(missing_ok=True)
        raise
    try:
        with transaction(runtime.sessions) as session:
            holder = _lock_quota_holders(session, user)
            _check_quota(session, runtime, holder, definition.slug)
            _check_unique(session, bench.id, base, holder)
            check_organisation(session, holder, organisation)
            base["team_id"] = holder.team_id  # the team charged is the one locked
            sub = Submission(
                **base,
                visibility=visibility,
                status=Status.QUEUED,
                verdict=report.verdict,
                missing_tasks=report.missing_tasks,
            )
            session.add(sub)
            session.flush()
            runtime.files.place(session, "submission", sub.id, staged)
            if kept.stat().st_size:
                runtime.files.place(session, "matched", sub.id, kept)
            sub.stored = True
            events.record(session, sub.id, "received", _received(report, size))
            events.record(session, sub.id, "validated", _validated(report))
            events.record_warnings(session, sub.id, report.warnings)
            audit(
                session,
                user,
                "submission.received",
                f"submission:{sub.id}",
                model=name,
                records=report.records,
                verdict=report.verdict,
                visibility=visibility,
            )
            windows = quota_windows(session, runtime, holder, definition.slug)
    except IntegrityError:
        raise ConflictError(
            f"the model name {name!r} was taken by a public submission made at the same "
            "moment; choose another"
        ) from None
    finally:
        staged.unlink(missing_ok=True)  # still there only when nothing was stored
        kept.unlink(missing_ok=True)
    try:
        runtime.queue.enqueue_score(sub.id)
    except QueueUnavailableError:
        _queue_later(runtime, sub.id)
        return Accepted(sub, windows, queued=False)
    return Accepted(sub, windows)


def _queue_later(runtime: Runtime, submission_id: int) -> None:
    """Say in the submission's log that its job waits for the queue (the reaper queues it,
    ``MEDVIDBENCH_JOB_REQUEUE_SECONDS`` after upload at the earliest, once the queue is back)."""
    log.warning("submission %s stored; the job queue is down, the reaper queues it", submission_id)
    try:
        with transaction(runtime.sessions) as session:
            events.record(
                session,
                submission_id,
                "waiting",
                "the job queue could not be reached; scoring starts once it is back",
            )
    except Exception:  # the submission is stored and will be scored: the note is not worth a 500
        log.exception("could not note the wait in submission %s's log", submission_id)


def _received(report: Any, size: int) -> str:
    return f"received {report.records:,} records ({size:,} bytes)"


def _validated(report: Any) -> str:
    warnings = len(report.warnings)
    missing = f"; not submitted: {', '.join(report.missing_tasks)}" if report.missing_tasks else ""
    restored = f"; {report.restored}" if report.restored else ""
    return (
        f"validated: {report.verdict}, {report.matched:,} predictions matched, "
        f"{count(warnings, 'warning')}{missing}{restored}; queued for scoring"
    )


def _check_unique(session: Any, benchmark_id: int, base: dict[str, Any], holder: User) -> None:
    """Refuse a file this account or its team already submitted, and a model name held on
    the boards (see :mod:`~medvidbench.server.services.names`). Nothing of another team's
    submissions is consulted but what is public: the same outputs (a public baseline's, say)
    may come from two teams, and a private run's name or file is never confirmed."""
    ours = Submission.user_id == holder.id
    if holder.team_id is not None:
        ours = or_(ours, Submission.team_id == holder.team_id)
    earlier = session.scalar(
        select(Submission)
        .where(
            ours,
            Submission.benchmark_id == benchmark_id,
            Submission.file_sha256 == base["file_sha256"],
            Submission.status.not_in(NOT_COUNTED),
            Submission.visibility != "withdrawn",  # withdrawn: may come again, renamed
        )
        .order_by(case((Submission.user_id == holder.id, 0), else_=1), Submission.id)
        .limit(1)
    )
    if earlier is not None and earlier.user_id == holder.id:
        raise ConflictError(
            f"you already submitted this exact file as submission {earlier.id} "
            f"({earlier.model_name!r})"
        )
    if earlier is not None:  # a teammate's, perhaps private: not named
        raise ConflictError("your team already submitted this exact file; submit it once per team")
    if held_publicly(session, benchmark_id, base["model_key"]):
        raise ConflictError(
            f"the model name {base['model_name']!r} is already on the leaderboard; choose another"
        )


def get_submission(runtime: Runtime, submission_id: int, viewer: User | None = None) -> Submission:
    """A submission; everyone may see scored ones, only the owner and staff the others."""
    with runtime.sessions() as session:
        sub = session.get(Submission, submission_id)
        if sub is None or sub.status == Status.DELETED:
            raise NotFoundError(f"no submission {submission_id}")
        staff = viewer is not None and viewer.role in STAFF
        private = sub.status in PRIVATE or sub.visibility != "public"
        if not staff and private and (viewer is None or viewer.id != sub.user_id):
            raise NotFoundError(f"no submission {submission_id}")
        return sub


def list_submissions(
    runtime: Runtime, user: User, everyone: bool = False, limit: int = 100
) -> list[Submission]:
    with runtime.sessions() as session:
        query = select(Submission).where(Submission.status != Status.DELETED)
        if not (everyone and user.role in STAFF):
            query = query.where(Submission.user_id == user.id)
        return list(session.scalars(query.order_by(Submission.id.desc()).limit(limit)))


def delete_submission(runtime: Runtime, actor: User, submission_id: int) -> None:
    """Delete a submission, its entries and its stored file (admin, or the owner)."""
    with transaction(runtime.sessions) as session:
        sub = session.get(Submission, submission_id)
        if sub is None or sub.status == Status.DELETED:
            raise NotFoundError(f"no submission {submission_id}")
        if actor.role != Role.ADMIN and actor.id != sub.user_id:
            raise NotFoundError(f"no submission {submission_id}")
        for entry in session.scalars(select(Entry).where(Entry.submission_id == sub.id)):
            session.delete(entry)
        sub.status, sub.stored = Status.DELETED, False
        board_cache.bump(session, sub.benchmark_id)
        audit(session, actor, "submission.delete", f"submission:{sub.id}", model=sub.model_name)
    runtime.files.delete("submission", submission_id)
    checkpoints.discard(runtime.files, submission_id)


def submission_view(
    runtime: Runtime, submission_id: int, viewer: User | None, evaluation: int | None = None
) -> dict[str, Any]:
    """Everything a detail page or the API shows about a submission (never ground truth): its
    state, the evaluation asked for (default: the boards' one), every evaluation stored, the
    validation warnings and the log.

    The submitter's own diagnostics (parse examples, warnings, errors) are shown to them and
    to staff.
    """
    from medvidbench.server.services import evaluations

    sub = get_submission(runtime, submission_id, viewer)
    owner = viewer is not None and (viewer.id == sub.user_id or viewer.role in STAFF)
    with runtime.sessions() as session:
        slug = session.scalar(select(TestSet.slug).where(TestSet.id == sub.benchmark_id))
        definition = runtime.definition(slug)
        ev = evaluations.chosen_evaluation(session, sub.id, definition, evaluation)
        stored = evaluations.evaluations_of(session, sub.id)
        team = session.get(Submission, sub.id).team  # type: ignore[union-attr]
    listed = [evaluations.describe(e, definition, ev) for e in stored]
    judged = any(m.judged for m in definition.metrics)
    judge_on = judge_wanted(runtime.settings) and judged
    per_task = ev.per_task if ev else {}
    if not owner:
        per_task = {
            t: {k: v for k, v in info.items() if k != "unparsed_examples"}
            for t, info in per_task.items()
        }
    on_boards = ev is not None and any(e["shown"] and e["on_boards"] for e in listed)
    return {
        "id": sub.id,
        "benchmark": definition.slug,
        "model_name": sub.model_name,
        "model_url": sub.model_url,
        "team": team.name if team else sub.organisation,
        "status": sub.status,
        **timeline(sub.status, judged),
        "final": sub.status in FINAL or (sub.status in ON_BOARD and not judge_on),
        "judge_on": judge_on,
        # whether the benchmark has judged metrics at all (no judge words otherwise)
        "judged": judged,
        "created_at": sub.created_at.isoformat(),
        "verdict": sub.verdict,
        "missing_tasks": sub.missing_tasks,
        "records": sub.record_count,
        "error": sub.error if owner else None,
        "settings": sub.settings,
        "evaluation_id": ev.id if ev else None,
        "metrics": ev.metrics if ev else None,
        "per_task": per_task,
        "per_dataset": ev.per_dataset if ev else {},
        "judge": ev.judge if ev else None,
        "profile": ev.profile if ev else None,
        "scorer_version": ev.scorer_version if ev else None,
        # 95 % intervals with their seed, replicates and cluster rule; the replicates stay inside
        "statistics": public(ev.statistics) if ev else None,
        # every scoring stored (re-scores under other profiles included), oldest first
        "evaluations": listed,
        "hidden": sub.hidden,
        "visibility": sub.visibility,
        # where a private run would rank among the public ones (its submitter's view)
        "would_rank": would_rank(runtime, definition.slug, ev.metrics)
        if ev and on_boards and owner and sub.visibility == "private"
        else None,
        # validation's warnings, each in full (submitter and staff; others see how many)
        "warnings": events.warnings(runtime, sub.id) if owner else None,
        # the steps with their times; error texts only for the submitter and staff
        "log": events.log(runtime, sub.id, full=owner),
        "owner": owner,
    }


def benchmark_of(runtime: Runtime, submission_id: int) -> str:
    """The slug of the benchmark a submission was made to."""
    with runtime.sessions() as session:
        slug = session.scalar(
            select(TestSet.slug)
            .join(Submission, Submission.benchmark_id == TestSet.id)
            .where(Submission.id == submission_id)
        )
    if slug is None:
        raise NotFoundError(f"no submission {submission_id}")
    return str(slug)
