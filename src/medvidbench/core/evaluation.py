"""Evaluation: match a submission to the test set, score every task, aggregate into a Report.

A task the submission leaves out is reported as missing and its metrics are null, never 0.
The three LLM-judged metrics stay null ("pending") until a judge has scored them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medvidbench import __version__
from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth, load_ground_truth
from medvidbench.benchmarks.medvidbench.matching import MatchedSubmission, load_submission
from medvidbench.benchmarks.medvidbench.tasks import TASKS, captions, load_builtin_scorers
from medvidbench.benchmarks.medvidbench.tasks.captions import CAPTION_TASKS
from medvidbench.core.errors import InvalidSubmissionError, UsageError
from medvidbench.core.profiles import METRIC_KEYS, SCORER_VERSION, get_profile
from medvidbench.core.scoring import Context, TaskResult

if TYPE_CHECKING:  # the judge client (openai, asyncio) is imported only by a run that judges
    from medvidbench.core.judge.client import Judge

Progress = Callable[[str, int, int], None]
_EXAMPLES = 3
_EXAMPLE_CHARS = 200


@dataclass(slots=True)
class Report:
    """The outcome of one evaluation (JSON-serialisable through :meth:`to_dict`).

    Attributes:
        metrics: The 10 leaderboard metrics; null when not computed (task missing, not judged).
        per_dataset: Per source dataset, each metric computed on that dataset's samples.
        per_task: Per task: status, counts, parse rate and task-specific diagnostics.
        profile: The metric profile used.
        scorer_version: Version of the scoring rules.
        judge: Judge provenance, or None when nothing was judged.
        missing_tasks: Tasks the submission left out.
        similarity: The optional offline caption-similarity diagnostic (``dvc_sim``,
            ``vs_sim``, ``rc_sim``, 0-1), kept apart from the 1-5 judge metrics.
    """

    metrics: dict[str, float | None]
    per_dataset: dict[str, dict[str, Any]]
    per_task: dict[str, dict[str, Any]]
    profile: str
    scorer_version: str
    judge: dict[str, Any] | None
    missing_tasks: list[str]
    submission: dict[str, Any]
    ground_truth: dict[str, Any]
    package_version: str = __version__
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    timings: dict[str, float] = field(default_factory=dict)
    similarity: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def evaluate(
    predictions: MatchedSubmission | str | Path | bytes,
    ground_truth: GroundTruth | str | Path | bytes,
    profile: str = "leaderboard-v1",
    tasks: Sequence[str] | None = None,
    ctx: Context | None = None,
    progress: Progress | None = None,
    judge: Judge | None = None,
    judge_progress: Callable[[int, int], None] | None = None,
    similarity: bool = False,
) -> Report:
    """Score a submission on every task it answers.

    Args:
        predictions: A matched submission, or a prediction file (path or bytes).
        ground_truth: A loaded test set, or a ground-truth file (path or bytes).
        profile: ``leaderboard-v1`` (published numbers) or ``strict-v2`` (corrected rules).
        tasks: Restrict scoring to these tasks (default: all).
        ctx: Scoring context (lets tests inject an embedder).
        progress: Called as ``progress(task, done, total)`` after each task.
        judge: An LLM judge for DVC_llm, VS_llm and RC_llm; without one they stay null.
        judge_progress: Called as ``judge_progress(done, total)`` while judging.
        similarity: Also compute the offline caption-similarity diagnostic (slow: it embeds
            every caption answer and reference).

    Raises:
        InvalidSubmissionError: when the prediction file is invalid.
        UsageError: for an unknown profile or task name.
    """
    began = time.monotonic()
    rules = get_profile(profile)
    gt = ground_truth if isinstance(ground_truth, GroundTruth) else load_ground_truth(ground_truth)
    matched = (
        predictions
        if isinstance(predictions, MatchedSubmission)
        else load_submission(predictions, gt)
    )
    if not matched.report.ok:
        raise InvalidSubmissionError(matched.report.errors, matched.report.source)
    wanted = _check_tasks(tasks)
    by_task: dict[str, list[int]] = {}
    for s in gt.samples:
        by_task.setdefault(s.task, []).append(s.index)
    selected = [t for t in TASKS if t in by_task and (wanted is None or t in wanted)]
    judged_tasks = [
        t
        for t in selected
        if judge is not None
        and t in CAPTION_TASKS
        and matched.report.coverage[t].status == "complete"
    ]
    # The judge (network-bound) starts first, on its own thread, and rule-based scoring
    # (CPU-bound) runs meanwhile: the first request leaves at once instead of after scoring.
    judging = None
    if judged_tasks and judge is not None:
        judging = _start_judging(judged_tasks, gt, matched, by_task, rules, judge, judge_progress)
    scorers = load_builtin_scorers()
    ctx = ctx or Context()
    results: list[TaskResult] = []
    per_task: dict[str, dict[str, Any]] = {}
    timings: dict[str, float] = {}
    for n, task in enumerate(selected, start=1):
        coverage = matched.report.coverage[task]
        if coverage.status != "complete":
            per_task[task] = {"status": "missing", "count": coverage.expected}
        else:
            if task in scorers:
                started = time.perf_counter()
                result = scorers[task].evaluate(*_inputs(task, gt, matched, by_task), rules, ctx)
                timings[task] = time.perf_counter() - started
                results.append(result)
                per_task[task] = {
                    "status": "scored",
                    **result.diagnostics,
                    "unparsed_examples": _unparsed(result, gt, matched),
                }
            else:
                per_task[task] = {"status": "pending judge", "count": coverage.expected}
        if progress:
            progress(task, n, len(selected))
    if judging is not None:
        started = time.perf_counter()
        for result in judging.result():
            results.append(result)
            info = per_task[result.task]
            if info["status"] == "scored":  # DVC: the rule-based part is already there
                info["judge"] = result.diagnostics
            else:
                info.update(status="scored", **result.diagnostics)
        timings["judge_wait"] = time.perf_counter() - started  # after rule-based scoring
        if judge is not None and judge.stats.first_sent is not None:
            timings["judge_first_request"] = judge.stats.first_sent - began
    similar = None
    if similarity:
        started = time.perf_counter()
        similar = _similarity(selected, gt, matched, by_task, ctx)
        timings["similarity"] = time.perf_counter() - started
    return Report(
        metrics=_metrics(results),
        per_dataset=_per_dataset(results),
        per_task=per_task,
        profile=rules.name,
        scorer_version=SCORER_VERSION,
        judge=judge.provenance() if judge is not None and judged_tasks else None,
        missing_tasks=matched.report.missing_tasks,
        submission={
            "sha256": matched.report.sha256,
            "records": matched.report.records,
            "matched": matched.report.matched,
            "verdict": matched.report.verdict,
        },
        ground_truth={"sha256": gt.sha256, "samples": len(gt)},
        timings=timings,
        similarity=similar,
    )


def _inputs(
    task: str, gt: GroundTruth, matched: MatchedSubmission, by_task: dict[str, list[int]]
) -> tuple[list[Any], list[str]]:
    samples = [gt.samples[i] for i in by_task[task]]
    return samples, [matched.predictions[i] or "" for i in by_task[task]]


def _similarity(
    selected: list[str],
    gt: GroundTruth,
    matched: MatchedSubmission,
    by_task: dict[str, list[int]],
    ctx: Context,
) -> dict[str, Any]:
    out: dict[str, Any] = {"about": captions.SIMILARITY_ABOUT}
    for task, key in captions.SIMILARITY_KEYS.items():
        complete = task in selected and matched.report.coverage[task].status == "complete"
        out[key] = (
            captions.similarity(*_inputs(task, gt, matched, by_task), ctx) if complete else None
        )
    return out


def _start_judging(
    tasks: list[str],
    gt: GroundTruth,
    matched: MatchedSubmission,
    by_task: dict[str, list[int]],
    rules: Any,
    judge: Judge,
    progress: Callable[[int, int], None] | None,
) -> Future[list[TaskResult]]:
    """Plan every caption task's pairs, then judge them in one pool on a thread of its own;
    the future gives each task's aggregate."""
    plans = [
        captions.plan(t, *_inputs(t, gt, matched, by_task), rules, judge.config.config_id)
        for t in tasks
    ]

    def run() -> list[TaskResult]:
        judged = judge.judge_all([r for p in plans for r in p.requests], progress)
        return [captions.aggregate(p, judged, rules) for p in plans]

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge")
    try:
        return pool.submit(run)
    finally:
        pool.shutdown(wait=False)  # the running job finishes; the thread then exits


def _check_tasks(tasks: Sequence[str] | None) -> set[str] | None:
    if tasks is None:
        return None
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise UsageError(
            f"unknown task(s) {', '.join(map(repr, unknown))}; expected some of {', '.join(TASKS)}"
        )
    return set(tasks)


def _metrics(results: list[TaskResult]) -> dict[str, float | None]:
    out: dict[str, float | None] = dict.fromkeys(METRIC_KEYS)
    for result in results:
        out.update({k: v for k, v in result.metrics.items() if k in out})
    return out


def _per_dataset(results: list[TaskResult]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for result in results:
        for dataset, values in result.per_dataset.items():
            entry = out.setdefault(dataset, {"tasks": {}})
            entry["tasks"].setdefault(result.task, {}).update(values)
            entry.update({k: values.get(k) for k in result.metrics})
    return dict(sorted(out.items()))


def _unparsed(
    result: TaskResult, gt: GroundTruth, matched: MatchedSubmission
) -> list[dict[str, Any]]:
    """A few of the submitter's own answers the parser could not read (never ground truth)."""
    out = []
    for r in result.samples:
        if not r.parsed:
            text = matched.predictions[r.index] or ""
            out.append(
                {
                    "index": r.index,
                    "id": gt.samples[r.index].sample_id,
                    "prediction": text[:_EXAMPLE_CHARS],
                }
            )
            if len(out) == _EXAMPLES:
                break
    return out
