"""Submissions: accept a prediction file, check it at once, queue it; delete one (showing and
listing them: :mod:`.submission_reads`).

Lifecycle: ``queued -> scoring -> scored -> judging -> complete``, or ``rejected`` (the file is
invalid: nothing is stored but the reason) or ``failed`` (our fault, after retries; the reason is
shown). Rejected and failed submissions do not count against quotas and free their model name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from sqlalchemy import case, delete, or_, select
from sqlalchemy.exc import IntegrityError

from medvidbench.core.benchmark import Benchmark
from medvidbench.core.display import count
from medvidbench.core.errors import (
    ConflictError,
    InvalidSubmissionError,
    NotFoundError,
    PermissionDeniedError,
    Problem,
    QueueUnavailableError,
    UsageError,
)
from medvidbench.core.submission import ValidationReport
from medvidbench.server import checkpoints
from medvidbench.server.lifecycle import NOT_COUNTED, Status
from medvidbench.server.roles import Role
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import events
from medvidbench.server.services.accounts import require_role
from medvidbench.server.services.audit import audit
from medvidbench.server.services.events import Kind
from medvidbench.server.services.names import held_publicly
from medvidbench.server.services.quota import QuotaWindow, check_quota, lock_holders, quota_windows
from medvidbench.server.services.teams import check_organisation
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.store import board_cache
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import (
    Entry,
    Evaluation,
    EvaluationEvidence,
    Submission,
    User,
)

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


@dataclass(frozen=True, slots=True)
class SubmissionForm:
    """What a submitter says about an upload, as :func:`accept` takes it."""

    model_name: str
    organisation: str = ""
    model_url: str | None = None
    contact: str | None = None
    settings: dict[str, Any] | None = None
    filename: str = ""
    benchmark: str | None = None  # a slug; None: the default benchmark
    visibility: str = "public"


@dataclass(slots=True)
class Checked:
    """An upload after its check, before it is refused or accepted.

    Attributes:
        definition: The benchmark it was made to.
        report: What validation found (errors make it a refusal).
        row: The submission's columns shared by a refusal and an acceptance.
        kept: The valid file's matched submission, for the score step (empty otherwise).
    """

    definition: Benchmark
    report: ValidationReport
    row: dict[str, Any]
    kept: Path

    @property
    def size(self) -> int:
        return int(self.row["file_size"])


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

    Three steps: :func:`check` (who may submit, the file's validation), :func:`refuse` (an
    invalid file: a rejected record with the reason) or :func:`store` (quota, uniqueness, the
    file and its row in one transaction), then the score job is queued.

    With the job queue down the submission is stored all the same (``queued`` false): the
    reaper of any worker queues it once the queue is back, so the submitter keeps its id and
    its place, and never has to upload it again.

    Raises:
        InvalidSubmissionError: the file is invalid (every problem listed; a rejected record is
            kept with the reason, the file is not).
        ConflictError: the model name is taken, or the same file was submitted before.
        QuotaExceededError: the team has no submissions left for the period.
    """
    form = SubmissionForm(
        model_name, organisation, model_url, contact, settings, filename, benchmark, visibility
    )
    checked = check(runtime, user, data, form)
    if not checked.report.ok:
        refuse(runtime, user, checked, filename)
    sub, windows = store(runtime, user, data, checked, organisation, visibility)
    try:
        runtime.queue.enqueue_score(sub.id)
    except QueueUnavailableError:
        _queue_later(runtime, sub.id)
        return Accepted(sub, windows, queued=False)
    return Accepted(sub, windows)


def check(runtime: Runtime, user: User, data: bytes | Path, form: SubmissionForm) -> Checked:
    """May ``user`` submit, and what does the file hold: the first step of :func:`accept`.

    Raises:
        PermissionDeniedError: the account may not submit (yet).
        UsageError: a bad visibility, model name or URL, or a file over the size limit.
    """
    _may_submit(user, form.visibility)
    name, url = _clean_name(form.model_name), clean_url(form.model_url)
    settings = list((form.settings or {}).items())[:MAX_SETTINGS]
    info = {str(k)[:40]: str(v)[:200] for k, v in settings}
    definition = runtime.definition(form.benchmark)
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
            form.filename,
            keep=kept,
        )
    except BaseException:
        kept.unlink(missing_ok=True)
        raise
    row = {
        "benchmark_id": bench.id,
        "user_id": user.id,
        "team_id": user.team_id,
        "model_name": name,
        "model_key": model_key(name),
        "model_url": url,
        "contact": (form.contact or "")[:200] or None,
        "settings": info,
        "organisation": " ".join(form.organisation.split())[:120],
        "file_sha256": report.sha256,
        "file_size": size,
        "record_count": report.records,
    }
    _board_rules(runtime, definition, report)
    return Checked(definition, report, row, kept)


def _may_submit(user: User, visibility: str) -> None:
    require_role(user, Role.SUBMITTER, Role.MAINTAINER)
    if visibility not in ("public", "private"):
        raise UsageError(f"visibility must be public or private; got {visibility!r}")
    if not user.approved:
        raise PermissionDeniedError(
            "your account waits for an administrator's approval; you can submit once approved"
        )


def _board_rules(runtime: Runtime, definition: Benchmark, report: ValidationReport) -> None:
    """Add what the board refuses beyond validation: options its profile cannot score, and
    (when the server says so) order-only matches."""
    if report.ok and definition.check_options is not None:
        problem = definition.check_options(report.options, definition.profile())
        if problem is not None:  # the board's profile could not score it: refuse it now
            report.errors.add(Problem("bad-option", problem))
    if runtime.settings.refuse_order_only:
        report.refuse_order_only()


def refuse(runtime: Runtime, user: User, checked: Checked, filename: str) -> NoReturn:
    """Keep a rejected record with the reason (never the file), then raise.

    Raises:
        InvalidSubmissionError: always, listing every problem.
    """
    report = checked.report
    checked.kept.unlink(missing_ok=True)
    with transaction(runtime.sessions) as session:
        reason = "; ".join(p.message for p in report.errors.items[:5])
        rejected = Submission(
            **checked.row, status=Status.REJECTED, error=reason[:4000], verdict="invalid"
        )
        session.add(rejected)
        session.flush()
        events.record(session, rejected.id, Kind.RECEIVED, _received(report, checked.size))
        audit(
            session,
            user,
            "submission.rejected",
            f"submission:{rejected.id}",
            model=checked.row["model_name"],
            problems=len(report.errors),
        )
        events.record(
            session,
            rejected.id,
            Kind.REJECTED,
            f"invalid: {len(report.errors):,} problem(s); the first: {reason[:600]}",
        )
    raise InvalidSubmissionError(report.errors, filename)


def store(
    runtime: Runtime,
    user: User,
    data: bytes | Path,
    checked: Checked,
    organisation: str,
    visibility: str,
) -> tuple[Submission, list[QuotaWindow]]:
    """Store a valid upload and its matched submission as a queued submission, charged to
    the quota: the last step of :func:`accept` before its job is queued.

    The file is compressed and written before the transaction, which then only puts it in
    place (renames it in the folder store; inserts its compressed parts in the database store,
    in the same transaction as its row): the embedded database (SQLite's single writer) is
    never held while a large file is compressed.

    Raises:
        ConflictError: the model name is taken, or the same file was submitted before.
        QuotaExceededError: no submissions left for the period.
    """
    kept = checked.kept
    try:
        staged = runtime.stage(data)
    except BaseException:
        kept.unlink(missing_ok=True)
        raise
    try:
        with transaction(runtime.sessions) as session:
            holder = _charge(session, runtime, user, checked, organisation)
            sub = Submission(
                **checked.row,
                visibility=visibility,
                status=Status.QUEUED,
                verdict=checked.report.verdict,
                missing_tasks=checked.report.missing_tasks,
            )
            session.add(sub)
            session.flush()
            runtime.files.place(session, "submission", sub.id, staged)
            if kept.stat().st_size:
                runtime.files.place(session, "matched", sub.id, kept)
            sub.stored = True
            _log_received(session, user, sub, checked, visibility)
            windows = quota_windows(session, runtime, holder, checked.definition.slug)
    except IntegrityError:
        raise ConflictError(
            f"the model name {checked.row['model_name']!r} was taken by a public submission "
            "made at the same moment; choose another"
        ) from None
    finally:
        staged.unlink(missing_ok=True)  # still there only when nothing was stored
        kept.unlink(missing_ok=True)
    return sub, windows


def _charge(
    session: Any, runtime: Runtime, user: User, checked: Checked, organisation: str
) -> User:
    """Lock the quota holders, refuse what is over quota or not unique; the holder charged."""
    row = checked.row
    holder = lock_holders(session, user)
    check_quota(session, runtime, holder, checked.definition.slug)
    _check_unique(session, row["benchmark_id"], row, holder)
    check_organisation(session, holder, organisation)
    row["team_id"] = holder.team_id  # the team charged is the one locked
    return holder


def _log_received(
    session: Any, user: User, sub: Submission, checked: Checked, visibility: str
) -> None:
    report = checked.report
    events.record(session, sub.id, Kind.RECEIVED, _received(report, checked.size))
    events.record(session, sub.id, Kind.VALIDATED, _validated(report))
    events.record_warnings(session, sub.id, report.warnings)
    audit(
        session,
        user,
        "submission.received",
        f"submission:{sub.id}",
        model=sub.model_name,
        records=report.records,
        verdict=report.verdict,
        visibility=visibility,
    )


def _queue_later(runtime: Runtime, submission_id: int) -> None:
    """Say in the submission's log that its job waits for the queue (the reaper queues it,
    ``MEDVIDBENCH_JOB_REQUEUE_SECONDS`` after upload at the earliest, once the queue is back)."""
    log.warning("submission %s stored; the job queue is down, the reaper queues it", submission_id)
    try:
        with transaction(runtime.sessions) as session:
            events.record(
                session,
                submission_id,
                Kind.WAITING,
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
        # its per-item evidence goes with it (the evaluations' numbers stay for the audit)
        session.execute(
            delete(EvaluationEvidence).where(
                EvaluationEvidence.evaluation_id.in_(
                    select(Evaluation.id).where(Evaluation.submission_id == sub.id)
                )
            )
        )
        sub.status, sub.stored = Status.DELETED, False
        board_cache.bump(session, sub.benchmark_id)
        audit(session, actor, "submission.delete", f"submission:{sub.id}", model=sub.model_name)
    runtime.files.delete("submission", submission_id)
    checkpoints.discard(runtime.files, submission_id)
