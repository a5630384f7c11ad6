"""Background work on submissions: scoring, judging, retrying, taking over abandoned jobs.

Every step starts by *claiming* the submission with one atomic UPDATE that succeeds only if the
submission is waiting for that step or its previous owner's lease has expired. So a job
delivered twice (two workers, a re-enqueued job) runs once, and a job whose worker was killed is
taken over after the lease. Results are written in one transaction that also checks the claim
still holds (a fencing check), so a late, superseded worker cannot overwrite anything.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.exc import IntegrityError

from medvidbench.core import cpu_budget
from medvidbench.core.config import judge_wanted
from medvidbench.core.cpu_budget import CpuBudgetError
from medvidbench.core.display import count
from medvidbench.core.evaluation import Options, Report, assemble, plan, score
from medvidbench.core.judging import judge_plan
from medvidbench.server import checkpoints
from medvidbench.server.lifecycle import STEPS, Status
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import events, item_results
from medvidbench.server.services.events import Kind
from medvidbench.server.store import board_cache
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import (
    Board,
    Entry,
    Evaluation,
    EvaluationEvidence,
    Submission,
    TestSet,
)


def _now() -> datetime:
    return datetime.now(UTC)


class JudgeFailed(Exception):
    """The judge failed on some caption pairs: nothing is stored (a judged metric is computed
    from every pair or not at all), and judging is tried again later, however often it takes:
    the fault is the judge's, not the submission's."""

    @classmethod
    def of(cls, report: Report) -> JudgeFailed | None:
        """The failure, when the judge left some task's pairs unanswered (its metrics null)."""
        withheld = {
            task: diag
            for task, info in report.per_task.items()
            for diag in (info.get("judge") or info,)
            if diag.get("status") == "judge failed"
        }
        if not withheld:
            return None
        unanswered = sum(int(d.get("unanswered_pairs") or 0) for d in withheld.values())
        pairs = sum(int(d.get("pairs") or 0) for d in withheld.values())
        reasons = ", ".join(
            f"{name} x{n}"
            for name, n in sorted(((report.judge or {}).get("failure_reasons") or {}).items())
        )
        return cls(
            f"the judge did not answer {unanswered:,} of {pairs:,} caption pairs of "
            f"{', '.join(sorted(withheld))} ({reasons or 'no reason given'}); their judged "
            "metrics stay empty until every pair is judged"
        )


def claim(runtime: Runtime, submission_id: int, step: str, worker: str) -> bool:
    """Take the submission for ``step``; False if it is not waiting for it (or is owned)."""
    waiting, running, _ = STEPS[step]
    now = _now()
    with transaction(runtime.sessions) as session:
        result = session.execute(
            update(Submission)
            .where(
                Submission.id == submission_id,
                or_(
                    Submission.status == waiting,
                    and_(Submission.status == running, Submission.lease_until < now),
                ),
            )
            .values(
                status=running,
                lease_owner=worker,
                lease_until=now + timedelta(seconds=runtime.settings.job_lease_seconds),
                attempts=Submission.attempts + 1,
                step_attempts=Submission.step_attempts + 1,
            )
        )
        claimed = bool(result.rowcount)  # type: ignore[attr-defined]
        if claimed:
            board_cache.bump_for_submission(session, submission_id)  # its status shows
            attempt = session.scalar(
                select(Submission.step_attempts).where(Submission.id == submission_id)
            )
            events.record(
                session,
                submission_id,
                Kind.SCORE_STARTED if step == "score" else Kind.JUDGE_STARTED,
                f"{'scoring' if step == 'score' else 'judging'} started"
                + (f" (attempt {attempt})" if attempt and attempt > 1 else ""),
            )
        return claimed


@contextmanager
def lease_kept(runtime: Runtime, submission_id: int, worker: str) -> Iterator[None]:
    """Renew the lease in the background while a long step runs."""
    stop = threading.Event()
    period = max(1.0, runtime.settings.job_lease_seconds / 3)

    def renew() -> None:
        while not stop.wait(period):
            with transaction(runtime.sessions) as session:
                session.execute(
                    update(Submission)
                    .where(Submission.id == submission_id, Submission.lease_owner == worker)
                    .values(
                        lease_until=_now() + timedelta(seconds=runtime.settings.job_lease_seconds)
                    )
                )

    thread = threading.Thread(target=renew, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@dataclass(slots=True)
class Scoring:
    """One scoring's report, and the per-item rows to keep with it for the item browser (None:
    not kept, the benchmark's labels being hidden); ``judge_next``: whether the submission has
    judged tasks a judge step would judge; ``evidence``: the per-item evidence, encoded
    (kept for every benchmark; never shown for a hidden-label one)."""

    report: Report
    items: list[dict[str, Any]] | None
    judge_next: bool = False
    evidence: bytes | None = None


def _report(
    runtime: Runtime, submission_id: int, judge: Any = None, profile: str | None = None
) -> Scoring:
    """Score (no ``judge``) or judge a submission, each piece of work done once.

    The matched submission comes from the upload's check (the file is matched again only for
    submissions stored before it was kept). The score step (``profile`` None) keeps its
    rule-based stage when there is something to judge and a judge to judge it; the judge step
    then judges only the judged tasks and merges, its bootstrap drawing only the metrics the
    judge adds.
    """
    with runtime.sessions() as session:
        sub = session.get(Submission, submission_id)
        bench = session.get(TestSet, sub.benchmark_id) if sub else None
        assert sub is not None and bench is not None
        file_sha256 = sub.file_sha256
    gt = runtime.ground_truth(bench.gt_sha256, bench.slug)
    definition = runtime.definition(bench.slug)
    matched = checkpoints.read_matched(runtime.files, submission_id)
    if matched is None or matched.report.sha256 != file_sha256:
        matched = definition.validate_submission(runtime.read_upload(submission_id), gt)
    planned = plan(definition, matched, gt, profile)
    options = Options(
        bootstrap=runtime.settings.bootstrap_replicates or None,
        seed=runtime.bootstrap_seed(definition, bench.gt_sha256),
        secret_seed=definition.labels != "public",
        per_item=True,
    )
    stage = None
    if judge is not None:
        stage = checkpoints.read_scored(
            runtime.files, submission_id, gt.sha256, planned.rules.name, definition.scorer_version
        )
    scored = stage.scored() if stage is not None else score(planned)
    judged = judge_plan(planned, judge) if judge is not None else None
    prior = stage.statistics if stage is not None else None
    report = assemble(planned, scored, judged, options, prior)
    if judge is None and profile is None and planned.judged and judge_wanted(runtime.settings):
        stage = checkpoints.ScoredStage(
            gt.sha256,
            report.profile,
            report.scorer_version,
            scored.results,
            scored.per_task,
            report.statistics,
        )
        checkpoints.write_scored(runtime.files, submission_id, stage)
    keep = item_results.wanted(definition)
    items = item_results.item_rows(definition, matched, scored.results) if keep else None
    evidence = report.evidence.encode() if report.evidence is not None else None
    report.evidence = None  # encoded: the report itself is stored without it
    return Scoring(report, items, bool(planned.judged), evidence)


def configured_judge(runtime: Runtime, slug: str, observer: Any = None) -> Any:
    """The judge the settings describe for a benchmark's rubric, its judgements kept in the
    database's judge cache (what a judge step, and a re-score drawing a judged bootstrap again,
    judge with).

    Raises:
        UsageError: the settings cannot make one (a configuration mistake).
    """
    from medvidbench.core.judge.client import Judge, JudgeConfig
    from medvidbench.server.store.judge_cache import DatabaseJudgeCache

    judging = runtime.definition(slug).judging
    config = JudgeConfig.from_settings(
        runtime.settings, prompt_version=judging.rubric.version if judging else ""
    )
    return Judge(config, DatabaseJudgeCache(runtime.sessions), observer=observer)


def _store(runtime: Runtime, submission_id: int, step: str, worker: str, scoring: Scoring) -> bool:
    """Write an evaluation (and its per-item results) and finish the step, if this worker
    still holds the claim."""
    _, running, done = STEPS[step]
    report = scoring.report
    judge_id = (report.judge or {}).get("config_id", "")
    with transaction(runtime.sessions) as session:
        sub = session.scalar(
            select(Submission)
            .where(
                Submission.id == submission_id,
                Submission.status == running,
                Submission.lease_owner == worker,
            )
            .with_for_update()
        )
        if sub is None:
            return False  # superseded: another worker took over after our lease expired
        exists = session.scalar(
            select(Evaluation.id).where(
                Evaluation.submission_id == sub.id,
                Evaluation.profile == report.profile,
                Evaluation.scorer_version == report.scorer_version,
                Evaluation.judge_id == judge_id,
            )
        )
        if exists is None:
            add_evaluation(session, sub.id, scoring, judge_id)
        events.record(
            session,
            sub.id,
            Kind.SCORED if step == "score" else Kind.JUDGED,
            _done_message(step, report),
        )
        if step == "score":
            _ensure_entry(session, sub)
            sub.scored_at = _now()
            if not scoring.judge_next and judge_wanted(runtime.settings):
                done = Status.COMPLETE  # nothing to judge: no judge step to wait for
        sub.status, sub.lease_owner, sub.lease_until, sub.error = done, None, None, None
        sub.step_attempts = 0  # the next step starts with its own attempts
        if done == Status.COMPLETE:
            sub.finished_at = _now()
        board_cache.bump(session, sub.benchmark_id)
    return True


def add_evaluation(session: Any, submission_id: int, scoring: Scoring, judge_id: str) -> None:
    """Add an evaluation and the per-item results it keeps (in the caller's transaction)."""
    report = scoring.report
    evaluation = Evaluation(
        submission_id=submission_id,
        profile=report.profile,
        scorer_version=report.scorer_version,
        judge_id=judge_id,
        metrics=report.metrics,
        per_dataset=report.per_dataset,
        per_task=report.per_task,
        judge=report.judge,
        statistics=report.statistics,
        per_group=report.per_group or None,
    )
    session.add(evaluation)
    session.flush()
    if scoring.items is not None:
        item_results.store(session, evaluation.id, scoring.items)
    if scoring.evidence is not None:
        session.add(EvaluationEvidence(evaluation_id=evaluation.id, data=scoring.evidence))


def _done_message(step: str, report: Report) -> str:
    """What a finished step did, in counts (no ground truth)."""
    computed = sum(v is not None for v in report.metrics.values())
    if step == "score":
        scored = sum(1 for t in report.per_task.values() if t.get("status") == "scored")
        return (
            f"scored ({report.profile}, scorer {report.scorer_version}): "
            f"{count(computed, 'metric')} on {count(scored, 'task')}"
            + (", with 95 % intervals" if report.statistics else "")
        )
    judge = report.judge or {}
    return (
        f"judged: {judge.get('pairs', 0):,} caption pairs, {judge.get('failures', 0):,} failed, "
        f"{judge.get('cache_hits', 0):,} from the cache"
    )


def _ensure_entry(session: Any, sub: Submission) -> None:
    board = session.scalar(
        select(Board).where(Board.benchmark_id == sub.benchmark_id, Board.kind == "community")
    )
    if board is None or session.scalar(
        select(Entry.id).where(Entry.board_id == board.id, Entry.submission_id == sub.id)
    ):
        return
    team = sub.team.name if sub.team else sub.organisation
    session.add(
        Entry(
            board_id=board.id,
            submission_id=sub.id,
            model_name=sub.model_name,
            model_key=sub.model_key,
            team_name=team,
            model_url=sub.model_url,
        )
    )


def run_step(
    runtime: Runtime, submission_id: int, step: str, worker: str, judge: Any = None
) -> str:
    """Claim, compute, store. Returns what happened: done, skipped, superseded, retry, failed."""
    if not claim(runtime, submission_id, step, worker):
        return "skipped"
    budget = runtime.settings.scoring_cpu_seconds if step == "score" else None
    try:
        with (
            lease_kept(runtime, submission_id, worker),
            cpu_budget.limited(budget, f"scoring submission {submission_id}"),
        ):
            scoring = _report(runtime, submission_id, judge=judge)
        failed = JudgeFailed.of(scoring.report) if step == "judge" else None
        if failed is not None:
            raise failed
        return "done" if _store(runtime, submission_id, step, worker, scoring) else "superseded"
    except IntegrityError:
        return "superseded"
    except Exception as exc:  # our fault: retried, then shown with the reason
        return _fail(runtime, submission_id, step, worker, exc)


def _fail(runtime: Runtime, submission_id: int, step: str, worker: str, exc: Exception) -> str:
    """Record a failed step: retried later (never given up on when the judge failed), or, after
    the last attempt, the submission failed."""
    waiting, running, _ = STEPS[step]
    judge_down = isinstance(exc, JudgeFailed)
    ours = judge_down or isinstance(exc, CpuBudgetError)  # said in full, no exception name
    reason = str(exc) if ours else f"{type(exc).__name__}: {exc}"[:2000]
    with transaction(runtime.sessions) as session:
        sub = session.scalar(
            select(Submission).where(
                Submission.id == submission_id,
                Submission.lease_owner == worker,
                Submission.status == running,
            )
        )
        if sub is None:
            return "superseded"
        # the answers cost too much: trying again would cost as much, for the same answer
        hopeless = isinstance(exc, CpuBudgetError)
        final = hopeless or (
            not judge_down and sub.step_attempts >= runtime.settings.job_max_attempts
        )
        delay = retry_delay(sub.step_attempts)
        later = f"; judging is tried again in {delay:.0f} s" if judge_down else ""
        later = later or "; it will be retried"
        if final and step == "judge":  # failed is private: a public row leaves the boards
            shown = sub.visibility == "public" and not sub.hidden
            later = "; it stays failed" + (", off the boards," if shown else "")
            later += " until an administrator re-judges it"
        # a judge outage is said to everyone (counts and error names only: no file, no answer)
        kind = Kind.JUDGE_FAILED if judge_down else Kind.FAILED if final else Kind.ERROR
        events.record(
            session,
            sub.id,
            kind,
            f"{'scoring' if step == 'score' else 'judging'} failed: {reason}"
            + ("" if final and step == "score" else later),
        )
        sub.status = Status.FAILED if final else waiting
        sub.error, sub.lease_owner = reason, None
        # a waiting submission's lease_until is the earliest the reaper may queue it again
        sub.lease_until = _now() + timedelta(seconds=delay) if judge_down else None
        board_cache.bump(session, sub.benchmark_id)
        return "failed" if final else "retry"


def judge_due(runtime: Runtime, submission_id: int) -> bool:
    """Whether a judge step is to follow: a judge is wanted and the submission, scored,
    waits for it (one without judged tasks is complete once scored)."""
    if not judge_wanted(runtime.settings):
        return False
    with runtime.sessions() as session:
        status = session.scalar(select(Submission.status).where(Submission.id == submission_id))
    return bool(status == Status.SCORED)


def step_attempts(runtime: Runtime, submission_id: int) -> int:
    """How many times the submission's current step has been claimed."""
    with runtime.sessions() as session:
        value = session.scalar(
            select(Submission.step_attempts).where(Submission.id == submission_id)
        )
    return int(value or 0)


def retry_delay(attempt: int) -> float:
    """Seconds before attempt ``attempt + 1``: 5, 15, 45, 135, then 300 at most."""
    return float(min(300, 5 * 3 ** max(0, attempt - 1)))


def stale(runtime: Runtime) -> list[tuple[int, str]]:
    """Submissions needing a job: queued for a while, or running with an expired lease."""
    now = _now()
    queued_grace = runtime.settings.job_requeue_seconds
    conditions = [
        and_(
            Submission.status == Status.QUEUED,
            Submission.created_at < now - timedelta(seconds=queued_grace),
        ),
        and_(Submission.status.in_((Status.SCORING, Status.JUDGING)), Submission.lease_until < now),
    ]
    if judge_wanted(runtime.settings):
        conditions.append(
            and_(
                Submission.status == Status.SCORED,
                Submission.scored_at < now - timedelta(seconds=queued_grace),
                # not before the time a failed judge step set
                or_(Submission.lease_until.is_(None), Submission.lease_until < now),
            )
        )
    with runtime.sessions() as session:
        query = select(Submission.id, Submission.status).where(or_(*conditions))
        rows = session.execute(query).all()
    return [
        (sid, "score" if status in (Status.QUEUED, Status.SCORING) else "judge")
        for sid, status in rows
    ]
