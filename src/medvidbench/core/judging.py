"""The judge stage of an evaluation: the judged tasks' requests planned, then sent on a thread
of their own while rule-based scoring goes on, and each task's result kept only when every
pair it needs was judged (:func:`withhold_if_failed`). Training rewards judge through the same
entry point, :func:`judge_in_background`; :mod:`medvidbench.core.evaluation` runs the stages
in turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import msgspec

from medvidbench.core.benchmark import Profile
from medvidbench.core.judge.parse import JudgeAnswerError
from medvidbench.core.scoring import JudgedScorer, TaskResult

if TYPE_CHECKING:  # the judge client (openai, asyncio) is imported only by a run that judges
    from concurrent.futures import Future

    from medvidbench.core.evaluation import Plan
    from medvidbench.core.judge.client import Judge

__all__ = [
    "JudgeJob",
    "Judged",
    "finish_judging",
    "judge_in_background",
    "judge_plan",
    "start_judging",
    "withhold_if_failed",
]

# The failure of a judge that answered, but never readably.
UNREADABLE = JudgeAnswerError.__name__

# One judged task's work: its scorer, items, answers and profile.
JudgeJob = tuple[JudgedScorer[Any], Sequence[Any], Sequence[Any], Profile]


class Judged(msgspec.Struct):
    """The judge stage's outcome: each judged task's result and the judge's provenance."""

    results: list[TaskResult]
    provenance: dict[str, Any] | None
    timings: dict[str, float] = msgspec.field(default_factory=dict)


def start_judging(
    planned: Plan, judge: Judge, progress: Callable[[int, int], None] | None = None
) -> Future[list[TaskResult]] | None:
    """Judge the plan's judged tasks on a thread of their own (None: nothing to judge)."""
    if not planned.judged:
        return None
    scorers = planned.benchmark.judged_scorers()
    jobs: list[JudgeJob] = [(scorers[t], *planned.inputs(t), planned.rules) for t in planned.judged]
    return judge_in_background(judge, jobs, progress)


def judge_in_background(
    judge: Judge, jobs: Sequence[JudgeJob], progress: Callable[[int, int], None] | None = None
) -> Future[list[TaskResult]]:
    """Plan every job's requests (here, before returning), then judge them all in one pool
    on a thread of its own; the future gives each job's result, in order. The one judging
    entry point: evaluations and training rewards both call it."""
    plans = [
        (scorer, scorer.plan(samples, texts, rules, judge.config.config_id), rules)
        for scorer, samples, texts, rules in jobs
    ]

    def run() -> list[TaskResult]:
        judged = judge.judge_all([r for _, p, _ in plans for r in p.requests], progress)
        results = []
        for scorer, planned, rules in plans:
            result = scorer.aggregate(planned, judged, rules)
            failed = [r.key for r in planned.requests if r.key not in judged]
            # the judge answered, but unreadably, on every attempt: the profile's rule (a
            # dropped sample, as upstream drops it); anything else is no answer at all
            unanswered = sum(1 for k in failed if judge.last_failures.get(k) != UNREADABLE)
            result.diagnostics.update(
                pairs=len(planned.requests), failed_pairs=len(failed), unanswered_pairs=unanswered
            )
            results.append(result)
        return results

    from concurrent.futures import ThreadPoolExecutor  # with logging: a run that judges only

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge")
    try:
        return pool.submit(run)
    finally:
        pool.shutdown(wait=False)  # the running job finishes; the thread then exits


def finish_judging(judging: Future[list[TaskResult]], judge: Judge, began: float) -> Judged:
    """Wait for the judge (``began``: when the evaluation started, ``time.monotonic()``)."""
    started = time.perf_counter()
    results = [withhold_if_failed(r) for r in judging.result()]
    timings = {"judge_wait": time.perf_counter() - started}  # after rule-based scoring
    if judge.stats.first_sent is not None:
        timings["judge_first_request"] = judge.stats.first_sent - began
    return Judged(results, judge.provenance(), timings)


def withhold_if_failed(result: TaskResult) -> TaskResult:
    """A judged task's result, or, when the judge did not answer some of its pairs (an
    outage, a timeout, every retry used), the result with every metric null and the reason in
    its diagnostics (``status`` "judge failed"): leaving those pairs out would publish a
    number that is not the metric (DVC_llm's rule gives 0.0 to a dataset with no judged pair,
    strict-v2 counts every event as missed). The judged pairs stay cached, so judging again
    sends only the others. (An answer the judge gave but that could not be read on any
    attempt follows the profile's rule instead: leaderboard-v1 drops the sample, as the
    published leaderboard does.)"""
    unanswered = result.diagnostics.get("unanswered_pairs", 0)
    pairs = result.diagnostics.get("pairs", 0)
    if not unanswered:
        return result
    nulls = dict.fromkeys(result.metrics)
    reason = (
        f"the judge did not answer {unanswered:,} of {pairs:,} pairs; the metric is computed "
        "only once every pair is judged (judge again: the judged pairs are cached)"
    )
    return TaskResult(
        result.task,
        nulls,
        {d: {**values, **nulls} for d, values in result.per_dataset.items()},
        {**result.diagnostics, "status": "judge failed", "reason": reason},
        [replace(s, values=None, extra=None) for s in result.samples],
    )


def judge_plan(
    planned: Plan, judge: Judge, progress: Callable[[int, int], None] | None = None
) -> Judged | None:
    """The judge stage alone (after a stored rule-based stage): None when nothing is judged."""
    began = time.monotonic()
    judging = start_judging(planned, judge, progress)
    return finish_judging(judging, judge, began) if judging is not None else None
