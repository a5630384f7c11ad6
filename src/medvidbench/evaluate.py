"""Evaluation: match a submission to the test set, score every task, aggregate into a Report.

A task the submission leaves out is reported as missing and its metrics are null, never 0.
The three LLM-judged metrics stay null ("pending") until a judge has scored them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medvidbench import __version__
from medvidbench.errors import InvalidSubmissionError, UsageError
from medvidbench.groundtruth import GroundTruth, load_ground_truth
from medvidbench.matching import MatchedSubmission, load_submission
from medvidbench.profiles import METRIC_KEYS, METRICS, SCORER_VERSION, get_profile
from medvidbench.tasks import TASKS, load_builtin_scorers
from medvidbench.tasks.base import Context, TaskResult

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def evaluate(
    predictions: MatchedSubmission | str | Path | bytes,
    ground_truth: GroundTruth | str | Path | bytes,
    profile: str = "leaderboard-v1",
    tasks: Sequence[str] | None = None,
    ctx: Context | None = None,
    progress: Progress | None = None,
) -> Report:
    """Score a submission on every task it answers.

    Args:
        predictions: A matched submission, or a prediction file (path or bytes).
        ground_truth: A loaded test set, or a ground-truth file (path or bytes).
        profile: ``leaderboard-v1`` (published numbers) or ``strict-v2`` (corrected rules).
        tasks: Restrict scoring to these tasks (default: all).
        ctx: Scoring context (lets tests inject an embedder).
        progress: Called as ``progress(task, done, total)`` after each task.

    Raises:
        InvalidSubmissionError: when the prediction file is invalid.
        UsageError: for an unknown profile or task name.
    """
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
    scorers = load_builtin_scorers()
    ctx = ctx or Context()
    by_task: dict[str, list[int]] = {}
    for s in gt.samples:
        by_task.setdefault(s.task, []).append(s.index)
    results: dict[str, TaskResult] = {}
    per_task: dict[str, dict[str, Any]] = {}
    timings: dict[str, float] = {}
    selected = [t for t in TASKS if t in by_task and (wanted is None or t in wanted)]
    for n, task in enumerate(selected, start=1):
        coverage = matched.report.coverage[task]
        if coverage.status != "complete":
            per_task[task] = {"status": "missing", "count": coverage.expected}
        elif task not in scorers:
            per_task[task] = {"status": "pending judge", "count": coverage.expected}
        else:
            started = time.perf_counter()
            samples = [gt.samples[i] for i in by_task[task]]
            texts = [matched.predictions[i] or "" for i in by_task[task]]
            result = scorers[task].evaluate(samples, texts, rules, ctx)
            timings[task] = time.perf_counter() - started
            results[task] = result
            per_task[task] = {
                "status": "scored",
                **result.diagnostics,
                "unparsed_examples": _unparsed(result, gt, matched),
            }
        if progress:
            progress(task, n, len(selected))
    return Report(
        metrics=_metrics(results),
        per_dataset=_per_dataset(results, scorers),
        per_task=per_task,
        profile=rules.name,
        scorer_version=SCORER_VERSION,
        judge=None,
        missing_tasks=matched.report.missing_tasks,
        submission={
            "sha256": matched.report.sha256,
            "records": matched.report.records,
            "matched": matched.report.matched,
            "verdict": matched.report.verdict,
        },
        ground_truth={"sha256": gt.sha256, "samples": len(gt)},
        timings=timings,
    )


def _check_tasks(tasks: Sequence[str] | None) -> set[str] | None:
    if tasks is None:
        return None
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise UsageError(
            f"unknown task(s) {', '.join(map(repr, unknown))}; expected some of {', '.join(TASKS)}"
        )
    return set(tasks)


def _metrics(results: dict[str, TaskResult]) -> dict[str, float | None]:
    out: dict[str, float | None] = dict.fromkeys(METRIC_KEYS)
    for m in METRICS:
        if m.task in results and m.key in results[m.task].metrics:
            out[m.key] = results[m.task].metrics[m.key]
    return out


def _per_dataset(
    results: dict[str, TaskResult], scorers: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for task, result in results.items():
        for dataset, values in result.per_dataset.items():
            entry = out.setdefault(dataset, {"tasks": {}})
            entry["tasks"][task] = values
            for key in scorers[task].metric_keys:
                entry[key] = values.get(key)
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
