"""Evaluations: which one a board or a page shows, and adding more (re-scoring under another
profile, re-judging).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import String, and_, or_, select, type_coerce
from sqlalchemy.exc import IntegrityError

from medvidbench.core import cpu_budget
from medvidbench.core.benchmark import Benchmark
from medvidbench.core.cpu_budget import CpuBudgetError
from medvidbench.core.display import count
from medvidbench.core.errors import ConflictError, NotFoundError
from medvidbench.server.lifecycle import NOT_COUNTED, ON_BOARD, Status
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import events, item_results
from medvidbench.server.services.events import Kind
from medvidbench.server.services.names import held_publicly
from medvidbench.server.services.steps import _report, add_evaluation, configured_judge
from medvidbench.server.services.submission_reads import benchmark_of
from medvidbench.server.store import board_cache
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import (
    Entry,
    Evaluation,
    EvaluationEvidence,
    Submission,
    SubmissionEvent,
    TestSet,
)

log = logging.getLogger(__name__)


def current_evaluations(
    session: Any,
    submission_ids: list[int],
    definition: Benchmark,
    profile: str | None = None,
    with_statistics: bool = True,
) -> dict[int, Any]:
    """For many submissions at once: the evaluation a board shows for each (current scorer,
    judged if available, newest), as rows of the columns a board needs; without the stored
    bootstrap when ``with_statistics`` is false (boards keep theirs decoded)."""
    found: list[Any] = []
    for start in range(0, len(submission_ids), 500):
        found += session.execute(
            select(
                Evaluation.submission_id,
                Evaluation.id,
                Evaluation.judge_id,
                Evaluation.metrics,
                Evaluation.judge,
                Evaluation.profile,
                Evaluation.scorer_version,
                Evaluation.created_at,
                *([Evaluation.statistics] if with_statistics else []),
            ).where(
                Evaluation.submission_id.in_(submission_ids[start : start + 500]),
                Evaluation.profile == (profile or definition.default_profile),
                Evaluation.scorer_version == definition.scorer_version,
            )
        )
    return _newest(found)


def board_picks(session: Any, board_id: int, definition: Benchmark) -> dict[int, tuple[int, Any]]:
    """For every submission with an entry on a board, the evaluation the board shows (as
    :func:`current_evaluations` picks it) as its id and creation time: one query joined on the
    board's entries. What a board needs of an evaluation beyond these never changes, so boards
    read it once (services/board_reads.py)."""
    query = (
        select(
            Evaluation.submission_id,
            Evaluation.id,
            Evaluation.judge_id,
            # compared, never shown: as the database hands it over (parsing costs milliseconds)
            type_coerce(Evaluation.created_at, String),
        )
        .join(Entry, Entry.submission_id == Evaluation.submission_id)
        .where(
            Entry.board_id == board_id,
            Evaluation.profile == definition.default_profile,
            Evaluation.scorer_version == definition.scorer_version,
        )
    )
    return {
        sub_id: (row[1], row[3])
        for sub_id, row in _newest(session.connection().execute(query)).items()
    }


def _newest(rows: Any) -> dict[int, Any]:
    """Per submission, the judged evaluation if there is one, else the newest: of rows that
    start with the submission id, the evaluation id and the judge id (read by position: a
    row's attributes by name cost ten times as much)."""
    best: dict[int, Any] = {}
    for ev in rows:
        held = best.get(ev[0])
        if held is None or (bool(ev[2]), ev[1]) > (bool(held[2]), held[1]):
            best[ev[0]] = ev
    return best


def current_evaluation(
    session: Any, submission_id: int, definition: Benchmark, profile: str | None = None
) -> Evaluation | None:
    """The full evaluation a detail page shows (current scorer, judged if available)."""
    found: Evaluation | None = session.scalar(
        select(Evaluation)
        .where(
            Evaluation.submission_id == submission_id,
            Evaluation.profile == (profile or definition.default_profile),
            Evaluation.scorer_version == definition.scorer_version,
        )
        .order_by((Evaluation.judge_id != "").desc(), Evaluation.id.desc())
        .limit(1)
    )
    return found


def evaluations_of(session: Any, submission_id: int) -> list[Evaluation]:
    """Every evaluation stored for a submission, oldest first: the first scoring and every
    re-score or re-judging after it (another profile, scorer version or judge)."""
    return list(
        session.scalars(
            select(Evaluation)
            .where(Evaluation.submission_id == submission_id)
            .order_by(Evaluation.id)
        )
    )


def chosen_evaluation(
    session: Any, submission_id: int, definition: Benchmark, evaluation_id: int | None
) -> Evaluation | None:
    """The evaluation a page shows: the one asked for, or the board's (:func:`current_evaluation`).

    Raises:
        NotFoundError: ``evaluation_id`` is not an evaluation of this submission.
    """
    if evaluation_id is None:
        return current_evaluation(session, submission_id, definition)
    found: Evaluation | None = session.get(Evaluation, evaluation_id)
    if found is None or found.submission_id != submission_id:
        raise NotFoundError(f"submission {submission_id} has no evaluation {evaluation_id}")
    return found


def describe(ev: Evaluation, definition: Benchmark, shown: Evaluation | None) -> dict[str, Any]:
    """One line of a submission's list of evaluations."""
    return {
        "id": ev.id,
        "profile": ev.profile,
        "scorer_version": ev.scorer_version,
        "judge": (ev.judge or {}).get("model_reported") or (ev.judge or {}).get("model_requested"),
        "judge_id": ev.judge_id or None,
        "at": ev.created_at.isoformat(timespec="seconds"),
        # the one the boards use: the default profile under the current scorer
        "on_boards": ev.profile == definition.default_profile
        and ev.scorer_version == definition.scorer_version,
        "shown": shown is not None and ev.id == shown.id,
    }


# A re-score is asked for, started, and done or given up, each a submission event whose message
# is the profile. A queue forgets a job whose worker dies; these events do not, so the reaper
# finds a re-score that was asked for or started and never finished, and runs it again.
RESCORE_EVENTS = (Kind.RESCORE_REQUESTED, Kind.RESCORE_STARTED, Kind.RESCORED, Kind.RESCORE_FAILED)


def request_rescore(runtime: Runtime, submission_id: int, profile: str) -> bool:
    """Record that a re-score under ``profile`` is wanted (the caller then enqueues it).

    Returns False, recording nothing, when the submission does not exist.
    """
    with transaction(runtime.sessions) as session:
        if session.get(Submission, submission_id) is None:
            return False
        events.record(session, submission_id, Kind.RESCORE_REQUESTED, profile)
    return True


def rescore(runtime: Runtime, submission_id: int, profile: str) -> bool:
    """Add an evaluation under another profile (or a new scorer version); old ones are kept.
    An existing one stored before per-item results were kept gets them now.

    The start and the end are logged (see RESCORE_EVENTS), so a re-score whose worker died is
    run again by the reaper; returns whether something was stored.
    """
    with transaction(runtime.sessions) as session:
        events.record(session, submission_id, Kind.RESCORE_STARTED, profile)
    budget = runtime.settings.scoring_cpu_seconds
    try:
        with cpu_budget.limited(budget, f"re-scoring submission {submission_id} ({profile})"):
            scoring = _report(runtime, submission_id, profile=profile)
    except CpuBudgetError as exc:  # as costly the next time: given up at once, with the reason
        with transaction(runtime.sessions) as session:
            events.record(session, submission_id, Kind.ERROR, exc.message)
            events.record(session, submission_id, Kind.RESCORE_FAILED, profile)
        return False
    report = scoring.report
    labels = _labels(runtime, submission_id)
    try:
        _redraw_judged(runtime, submission_id, profile, report.scorer_version, labels)
    except Exception:  # the judged bootstrap stays withheld; the re-score itself goes on
        log.warning(
            "submission %s: the judged bootstrap was not drawn again", submission_id, exc_info=True
        )
    try:
        with transaction(runtime.sessions) as session:
            existing = session.scalar(
                select(Evaluation.id).where(
                    Evaluation.submission_id == submission_id,
                    Evaluation.profile == profile,
                    Evaluation.scorer_version == report.scorer_version,
                    Evaluation.judge_id == "",
                )
            )
            if existing is None:
                add_evaluation(session, submission_id, scoring, "")
            elif not _complete_existing(session, existing, scoring, labels):
                events.record(
                    session, submission_id, Kind.RESCORED, _rescored(report, "already stored")
                )
                return False
            computed = sum(v is not None for v in report.metrics.values())
            done = count(computed, "metric") + (
                ", with 95 % intervals" if report.statistics else ""
            )
            events.record(session, submission_id, Kind.RESCORED, _rescored(report, done))
            board_cache.bump_for_submission(session, submission_id)
    except IntegrityError:
        return False  # another worker stored the same evaluation first
    return True


def _complete_existing(session: Any, evaluation_id: int, scoring: Any, labels: str) -> bool:
    """Give an evaluation stored before per-item results or evidence were kept what it lacks,
    and one whose bootstrap was drawn with a seed anyone knows (on a benchmark with hidden
    labels: :func:`~medvidbench.core.statistics.usable`) the one drawn now; whether anything
    was added or replaced."""
    from medvidbench.core.statistics import usable

    added = False
    evaluation = session.get(Evaluation, evaluation_id)
    fresh = scoring.report.statistics
    if (
        evaluation.statistics is not None
        and usable(evaluation.statistics, labels) is None
        and usable(fresh, labels) is not None
    ):
        evaluation.statistics = fresh
        added = True
    if scoring.items is not None and not item_results.kept(session, evaluation_id):
        item_results.store(session, evaluation_id, scoring.items)
        added = True
    if scoring.evidence is not None and session.get(EvaluationEvidence, evaluation_id) is None:
        session.add(EvaluationEvidence(evaluation_id=evaluation_id, data=scoring.evidence))
        added = True
    return added


def _redraw_judged(
    runtime: Runtime, submission_id: int, profile: str, scorer_version: str, labels: str
) -> bool:
    """Give a judged evaluation of ``profile`` whose bootstrap was drawn with a seed anyone
    knows (an earlier release's: withheld, :func:`~medvidbench.core.statistics.usable`) the
    one drawn now with the server's seed: the submission judged again with the configured
    judge, whose judgements of it the judge cache holds (the same configuration: its id), and
    stored only when every metric comes out as stored, so that only the bootstrap changes.
    Whether one was replaced; nothing to do, no judge configured, or another judge: False."""
    from medvidbench.core.config import judge_wanted
    from medvidbench.core.statistics import usable

    if labels == "public" or not judge_wanted(runtime.settings):
        return False
    with runtime.sessions() as session:
        stale = [
            (e.id, e.judge_id, e.metrics)
            for e in session.scalars(
                select(Evaluation).where(
                    Evaluation.submission_id == submission_id,
                    Evaluation.profile == profile,
                    Evaluation.scorer_version == scorer_version,
                    Evaluation.judge_id != "",
                )
            )
            if e.statistics is not None and usable(e.statistics, labels) is None
        ]
    if not stale:
        return False
    judge = configured_judge(runtime, benchmark_of(runtime, submission_id))
    fresh = _report(runtime, submission_id, judge=judge, profile=profile).report
    judge_id = (fresh.judge or {}).get("config_id", "")
    if usable(fresh.statistics, labels) is None:
        return False
    replaced = False
    with transaction(runtime.sessions) as session:
        for evaluation_id, stored_judge, metrics in stale:
            if stored_judge == judge_id and metrics == fresh.metrics:
                evaluation = session.get(Evaluation, evaluation_id)
                assert evaluation is not None
                evaluation.statistics = fresh.statistics
                replaced = True
        if replaced:
            board_cache.bump_for_submission(session, submission_id)
    return replaced


def _labels(runtime: Runtime, submission_id: int) -> str:
    """The labels (hidden or public) of the benchmark a submission was made to."""
    return runtime.definition(benchmark_of(runtime, submission_id)).labels


def _rescored(report: Any, done: str) -> str:
    """The message of a finished re-score; :func:`lost_rescores` reads the profile back."""
    return f"re-scored ({report.profile}, scorer {report.scorer_version}): {done}"


def _rescore_profile(kind: str, message: str) -> str:
    """The profile a re-score event is about (the message of the others is the profile)."""
    if kind == Kind.RESCORED:
        return message.removeprefix("re-scored (").split(",", 1)[0]
    return message


def lost_rescores(runtime: Runtime) -> list[tuple[int, str]]:
    """Re-scores asked for or started longer than a job lease ago and never finished, as
    ``(submission id, profile)``; one started ``job_max_attempts`` times is given up (logged as
    ``rescore-failed``, shown on the submission's page) instead of returned."""
    lease = timedelta(seconds=runtime.settings.job_lease_seconds)
    with runtime.sessions() as session:
        rows = session.execute(
            select(
                SubmissionEvent.submission_id,
                SubmissionEvent.kind,
                SubmissionEvent.message,
                SubmissionEvent.at,
            )
            .where(SubmissionEvent.kind.in_(RESCORE_EVENTS))
            .order_by(SubmissionEvent.at, SubmissionEvent.id)
        ).all()
    last: dict[tuple[int, str], tuple[str, Any]] = {}
    starts: dict[tuple[int, str], int] = {}
    for submission_id, kind, message, at in rows:
        key = (submission_id, _rescore_profile(kind, message))
        last[key] = (kind, at if at.tzinfo else at.replace(tzinfo=UTC))  # SQLite: naive UTC
        if kind == Kind.RESCORE_STARTED:
            starts[key] = starts.get(key, 0) + 1
        elif kind in (Kind.RESCORED, Kind.RESCORE_FAILED):
            starts.pop(key, None)
    now = datetime.now(UTC)
    due = []
    for key, (kind, at) in last.items():
        if kind in (Kind.RESCORED, Kind.RESCORE_FAILED) or at > now - lease:
            continue
        if starts.get(key, 0) >= runtime.settings.job_max_attempts:
            with transaction(runtime.sessions) as session:
                events.record(session, key[0], Kind.RESCORE_FAILED, key[1])
            continue
        due.append(key)
    return due


def request_rejudge(runtime: Runtime, submission_id: int) -> bool:
    """Put a scored or completed submission back in line for judging (cached pairs are free),
    and one whose judging failed for good back on its boards, waiting for the judge.

    Returns whether it was put back (False when it is not at a judgeable stage: not scored, or
    failed in scoring).

    Raises:
        ConflictError: the submission's judging failed and, while it held neither (a failed
            submission counts for nothing), its public model name was taken on the boards or
            its file was submitted again by its account or team. Coming back, it counts
            against the quota again, past the limit if need be (the failure was ours).
    """
    judgeable = or_(
        Submission.status.in_((Status.SCORED, Status.COMPLETE)),
        and_(Submission.status == Status.FAILED, Submission.scored_at.is_not(None)),
    )
    try:
        with transaction(runtime.sessions) as session:
            # locked (PostgreSQL): a worker claiming the judging step meanwhile waits, then
            # sees what this wrote; it never has its claim overwritten
            sub = session.scalar(
                select(Submission)
                .where(Submission.id == submission_id, judgeable)
                .with_for_update()
            )
            if sub is None:
                return False
            if sub.status == Status.FAILED:
                _check_still_unique(session, sub)
                shown = sub.visibility == "public" and not sub.hidden
                back = "waiting for the judge" + (", back on the boards" if shown else "")
                events.record(session, sub.id, Kind.REJUDGE, back)
            sub.status, sub.step_attempts = Status.SCORED, 0
            board_cache.bump(session, sub.benchmark_id)
            return True
    except IntegrityError:  # the name was taken between the check and the write
        with runtime.sessions() as session:
            sub = session.get(Submission, submission_id)
            assert sub is not None
            raise _name_taken(sub) from None


def _check_still_unique(session: Any, sub: Submission) -> None:
    """Refuse to bring a failed submission back over what took its place while it counted
    for nothing: its public model name, or its file submitted again."""
    if sub.visibility == "public" and held_publicly(
        session, sub.benchmark_id, sub.model_key, but=sub.id
    ):
        raise _name_taken(sub)
    if sub.visibility == "withdrawn":  # a withdrawn submission holds no file
        return
    ours = Submission.user_id == sub.user_id
    if sub.team_id is not None:
        ours = or_(ours, Submission.team_id == sub.team_id)
    again = session.scalar(
        select(Submission.id)
        .where(
            ours,
            Submission.id != sub.id,
            Submission.benchmark_id == sub.benchmark_id,
            Submission.file_sha256 == sub.file_sha256,
            Submission.status.not_in(NOT_COUNTED),
            Submission.visibility != "withdrawn",
        )
        .limit(1)
    )
    if again is not None:
        raise ConflictError(
            f"submission {sub.id}'s judging failed, and its file was submitted again since as "
            f"submission {again}, which stands; it cannot come back beside it"
        )


def _name_taken(sub: Submission) -> ConflictError:
    return ConflictError(
        f"submission {sub.id}'s judging failed, and its model name {sub.model_name!r} has been "
        "taken on the leaderboard since; it cannot come back under that name"
    )


def queue_rescore(runtime: Runtime, submission_id: int, profile: str) -> bool:
    """Record a wanted re-score under ``profile`` and enqueue it (see :func:`request_rescore`);
    returns False, queueing nothing, when the submission does not exist."""
    if not request_rescore(runtime, submission_id, profile):
        return False
    runtime.queue.enqueue_rescore(submission_id, profile)
    return True


def queue_rejudge(runtime: Runtime, submission_id: int) -> bool:
    """Put a submission back in line for judging and enqueue the judging (see
    :func:`request_rejudge`); returns False when it is not at a judgeable stage."""
    if not request_rejudge(runtime, submission_id):
        return False
    runtime.queue.enqueue_judge(submission_id)
    return True


def on_board(runtime: Runtime, slug: str | None = None) -> list[int]:
    """The ids of a benchmark's scored submissions (the ones a re-scoring covers)."""
    slug = runtime.definition(slug).slug
    tests = select(TestSet.id).where(TestSet.slug == slug)
    with runtime.sessions() as session:
        return list(
            session.scalars(
                select(Submission.id).where(
                    Submission.status.in_(ON_BOARD), Submission.benchmark_id.in_(tests)
                )
            )
        )
