"""Evaluation, one loop for every benchmark: match a submission to the test set, score every
task with the benchmark's scorers, aggregate into a Report.

A task the submission leaves out is reported as missing and its metrics are null, never 0.
Judged metrics stay null ("pending") until a judge has scored them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medvidbench import __version__
from medvidbench.core.benchmark import Benchmark, Profile
from medvidbench.core.errors import InvalidSubmissionError, UsageError
from medvidbench.core.scoring import Context, JudgedScorer, TaskResult, TaskScorer, TestSet
from medvidbench.core.submission import MatchedSubmission

if TYPE_CHECKING:  # the judge client (openai, asyncio) is imported only by a run that judges
    from medvidbench.core.judge.client import Judge

Progress = Callable[[str, int, int], None]
_EXAMPLES = 3
_EXAMPLE_CHARS = 200


@dataclass(slots=True)
class Report:
    """The outcome of one evaluation (JSON-serialisable through :meth:`to_dict`).

    Attributes:
        metrics: The benchmark's metrics; null when not computed (task missing, not judged).
        per_dataset: Per source dataset, each metric computed on that dataset's samples.
        per_task: Per task: status, counts, parse rate and task-specific diagnostics.
        profile: The metric profile used.
        scorer_version: Version of the benchmark's scoring rules.
        judge: Judge provenance, or None when nothing was judged.
        missing_tasks: Tasks the submission left out.
        similarity: The optional offline caption-similarity diagnostic (``dvc_sim``,
            ``vs_sim``, ``rc_sim``, 0-1), kept apart from the 1-5 judge metrics.
        benchmark: The benchmark's slug.
        statistics: Bootstrap intervals per metric with their seed, replicate count and cluster
            rule, and the replicates themselves (base64 float32, for paired comparisons), or
            None when not asked for (:mod:`medvidbench.core.statistics`).
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
    benchmark: str = ""
    statistics: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def evaluate(
    benchmark: Benchmark,
    predictions: MatchedSubmission | str | Path | bytes,
    ground_truth: TestSet | str | Path | bytes,
    profile: str | None = None,
    tasks: Sequence[str] | None = None,
    ctx: Context | None = None,
    progress: Progress | None = None,
    judge: Judge | None = None,
    judge_progress: Callable[[int, int], None] | None = None,
    similarity: bool = False,
    options: Mapping[str, Any] | None = None,
    bootstrap: int | None = None,
    seed: int = 0,
    on_result: Callable[[TaskResult], None] | None = None,
) -> Report:
    """Score a submission on every task of ``benchmark`` it answers.

    Args:
        benchmark: The benchmark definition (its loaders, scorers, metrics and profiles).
        predictions: A matched submission, or a prediction file (path or bytes).
        ground_truth: A loaded test set, or a ground-truth file (path or bytes).
        profile: One of the benchmark's profiles (default: its first).
        tasks: Restrict scoring to these tasks (default: all).
        ctx: Scoring context (lets tests inject an embedder).
        progress: Called as ``progress(task, done, total)`` after each task.
        judge: An LLM judge for the judged metrics; without one they stay null.
        judge_progress: Called as ``judge_progress(done, total)`` while judging.
        similarity: Also compute the offline caption-similarity diagnostic (slow: it embeds
            every caption answer and reference).
        options: Scoring options for the benchmark's scorers; they override what the file
            declares (``matched.options``).
        bootstrap: Replicates of a cluster bootstrap for 95 % intervals (None: no intervals);
            ``seed`` seeds it. Judged metrics use the judgements already made.
        on_result: Called with each rule-based task's result, its per-sample outcomes
            included (the server keeps them for its item browser).

    Raises:
        InvalidSubmissionError: when the prediction file is invalid.
        UsageError: for an unknown profile or task name.
    """
    began = time.monotonic()
    rules = benchmark.profile(profile)
    gt: TestSet = (
        benchmark.load_ground_truth(ground_truth)
        if isinstance(ground_truth, str | Path | bytes)
        else ground_truth
    )
    matched = (
        predictions
        if isinstance(predictions, MatchedSubmission)
        else benchmark.validate_submission(predictions, gt)
    )
    if not matched.report.ok:
        raise InvalidSubmissionError(matched.report.errors, matched.report.source)
    wanted = _check_tasks(benchmark, tasks)
    by_task: dict[str, list[int]] = {}
    for s in gt.samples:
        by_task.setdefault(s.task, []).append(s.index)
    selected = [
        t.name
        for t in benchmark.tasks
        if t.name in by_task and (wanted is None or t.name in wanted)
    ]
    judged_scorers = benchmark.judged_scorers()
    judged_tasks = [
        t
        for t in selected
        if judge is not None
        and t in judged_scorers
        and matched.report.coverage[t].status == "complete"
    ]
    # The judge (network-bound) starts first, on its own thread, and rule-based scoring
    # (CPU-bound) runs meanwhile: the first request leaves at once instead of after scoring.
    judging = None
    if judged_tasks and judge is not None:
        judging = _start_judging(
            [judged_scorers[t] for t in judged_tasks],
            gt,
            matched,
            by_task,
            rules,
            judge,
            judge_progress,
        )
    scorers = benchmark.scorers()
    ctx = ctx or Context(embedder_factory=benchmark.embedder)
    ctx.options = {**ctx.options, **matched.options, **(options or {})}
    results: list[TaskResult] = []
    # the scorer of each result (its linearisation, for intervals)
    scored_by: list[TaskScorer[Any] | JudgedScorer[Any]] = []
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
                scored_by.append(scorers[task])
                if on_result is not None:
                    on_result(result)
                per_task[task] = {
                    "status": "scored",
                    **result.diagnostics,
                    "unparsed_examples": _unparsed(result, gt, matched),
                    "not_scored": _not_scored(result),
                }
            else:
                per_task[task] = {"status": "pending judge", "count": coverage.expected}
        if progress:
            progress(task, n, len(selected))
    if judging is not None:
        started = time.perf_counter()
        for result in judging.result():
            results.append(result)
            scored_by.append(judged_scorers[result.task])
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
        similar = _similarity(judged_scorers, selected, gt, matched, by_task, ctx)
        timings["similarity"] = time.perf_counter() - started
    metrics = _metrics(benchmark, results)
    statistics = None
    if bootstrap:
        started = time.perf_counter()
        statistics = _statistics(benchmark, gt, results, scored_by, rules, metrics, bootstrap, seed)
        timings["bootstrap"] = time.perf_counter() - started
    return Report(
        metrics=metrics,
        per_dataset=_per_dataset(results),
        per_task=per_task,
        profile=rules.name,
        scorer_version=benchmark.scorer_version,
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
        benchmark=benchmark.slug,
        statistics=statistics,
    )


def _statistics(
    benchmark: Benchmark,
    gt: TestSet,
    results: list[TaskResult],
    scored_by: list[TaskScorer[Any] | JudgedScorer[Any]],
    rules: Profile,
    metrics: Mapping[str, float | None],
    replicates: int,
    seed: int,
) -> dict[str, Any]:
    """Every computed metric's bootstrap interval, clusters per the benchmark's rule."""
    from medvidbench.core.statistics import Design, bootstrap

    parts = [
        scorer.linearise(result.samples, rules)
        for scorer, result in zip(scored_by, results, strict=True)
    ]
    uncertainty = benchmark.uncertainty
    design = Design.build(parts, [uncertainty.cluster_of(item) for item in gt.samples])
    if uncertainty.derived_formulas is not None:
        design.formulas.update(uncertainty.derived_formulas(dict(design.formulas)))
    keys = [k for k in benchmark.metric_keys if metrics.get(k) is not None and k in design.formulas]
    return bootstrap(design, keys, uncertainty.cluster_rule, replicates, seed).to_dict(
        with_replicates=True
    )


def _inputs(
    task: str, gt: TestSet, matched: MatchedSubmission, by_task: dict[str, list[int]]
) -> tuple[list[Any], list[str]]:
    samples = [gt.samples[i] for i in by_task[task]]
    return samples, [matched.predictions[i] or "" for i in by_task[task]]


def _similarity(
    judged_scorers: Mapping[str, JudgedScorer[Any]],
    selected: list[str],
    gt: TestSet,
    matched: MatchedSubmission,
    by_task: dict[str, list[int]],
    ctx: Context,
) -> dict[str, Any]:
    """The similarity diagnostic of every judged scorer that offers one (what it is: its
    ``similarity_about``)."""
    out: dict[str, Any] = {}
    for task, scorer in judged_scorers.items():
        key = scorer.similarity_key
        if key is None:
            continue
        out.setdefault("about", scorer.similarity_about)
        complete = task in selected and matched.report.coverage[task].status == "complete"
        out[key] = (
            scorer.similarity(*_inputs(task, gt, matched, by_task), ctx) if complete else None
        )
    return out


def _start_judging(
    scorers: list[JudgedScorer[Any]],
    gt: TestSet,
    matched: MatchedSubmission,
    by_task: dict[str, list[int]],
    rules: Profile,
    judge: Judge,
    progress: Callable[[int, int], None] | None,
) -> Future[list[TaskResult]]:
    """Plan every judged task's requests, then judge them in one pool on a thread of its own;
    the future gives each task's aggregate."""
    plans = [
        (s, s.plan(*_inputs(s.task, gt, matched, by_task), rules, judge.config.config_id))
        for s in scorers
    ]

    def run() -> list[TaskResult]:
        judged = judge.judge_all([r for _, p in plans for r in p.requests], progress)
        return [s.aggregate(p, judged, rules) for s, p in plans]

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge")
    try:
        return pool.submit(run)
    finally:
        pool.shutdown(wait=False)  # the running job finishes; the thread then exits


def _check_tasks(benchmark: Benchmark, tasks: Sequence[str] | None) -> set[str] | None:
    if tasks is None:
        return None
    known = benchmark.tasks_by_name
    unknown = [t for t in tasks if t not in known]
    if unknown:
        raise UsageError(
            f"unknown task(s) {', '.join(map(repr, unknown))} for benchmark "
            f"{benchmark.slug!r}; expected some of {', '.join(known)}"
        )
    return set(tasks)


def _metrics(benchmark: Benchmark, results: list[TaskResult]) -> dict[str, float | None]:
    """Every declared metric, null unless computed; a metric the benchmark does not declare is
    the plug-in's bug and stops the evaluation instead of vanishing."""
    out: dict[str, float | None] = dict.fromkeys(benchmark.metric_keys)
    for result in results:
        undeclared = [k for k in result.metrics if k not in out]
        if undeclared:
            raise ValueError(
                f"benchmark {benchmark.slug!r}: the {result.task!r} scorer produced metrics "
                f"its definition does not declare: {', '.join(undeclared)}"
            )
        out.update(result.metrics)
    if benchmark.derived_metrics is not None:
        out.update(benchmark.derived_metrics(out))
    return out


def _per_dataset(results: list[TaskResult]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for result in results:
        for dataset, values in result.per_dataset.items():
            entry = out.setdefault(dataset, {"tasks": {}})
            entry["tasks"].setdefault(result.task, {}).update(values)
            entry.update({k: values.get(k) for k in result.metrics})
    return dict(sorted(out.items()))


def _not_scored(result: TaskResult) -> dict[str, int]:
    """Why samples were left out of the mean, with how many each reason left out."""
    reasons: dict[str, int] = {}
    for r in result.samples:
        if r.values is None:
            reason = r.note or "excluded by the profile's rules"
            reasons[reason] = reasons.get(reason, 0) + 1
    return reasons


def _unparsed(result: TaskResult, gt: TestSet, matched: MatchedSubmission) -> list[dict[str, Any]]:
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
