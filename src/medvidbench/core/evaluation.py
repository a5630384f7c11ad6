"""Evaluation, one path for every benchmark, in four stages with few parameters each:

- :func:`plan`: load and match what is not loaded yet; choose the tasks scored by rules and
  those a judge scores;
- :func:`score`: score every rule-based task (per-sample results kept);
- :func:`~medvidbench.core.judging.start_judging` /
  :func:`~medvidbench.core.judging.judge_in_background` (:mod:`medvidbench.core.judging`,
  re-exported here): the judge, on a thread of its own (the one judging entry point: training
  rewards use it too);
- :func:`assemble`: merge, compute the metrics and the bootstrap intervals into a
  :class:`~medvidbench.core.report.Report`.

:func:`evaluate` runs them in turn; the server runs them across its steps (the judge step
merges with the score step's kept results). A task the submission leaves out is reported as
missing and its metrics are null, never 0. Judged metrics stay null ("pending") until a judge
has scored them, and null ("judge failed") when the judge failed on any of a task's pairs: a
judged metric is computed from every pair it needs or not at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from medvidbench.core import cpu_budget
from medvidbench.core.benchmark import Benchmark, Profile
from medvidbench.core.errors import InvalidSubmissionError, UsageError
from medvidbench.core.judging import (
    UNREADABLE,
    Judged,
    JudgeJob,
    finish_judging,
    judge_in_background,
    judge_plan,
    start_judging,
    withhold_if_failed,
)
from medvidbench.core.report import Report, metrics_of, per_dataset_of, per_group_of
from medvidbench.core.scoring import Context, JudgedScorer, TaskResult, TaskScorer, TestSet
from medvidbench.core.submission import MatchedSubmission

__all__ = [
    "UNREADABLE",
    "JudgeJob",
    "Judged",
    "Options",
    "Plan",
    "Report",
    "Scored",
    "assemble",
    "evaluate",
    "finish_judging",
    "judge_in_background",
    "judge_plan",
    "plan",
    "score",
    "start_judging",
    "withhold_if_failed",
]

if TYPE_CHECKING:  # the judge client (openai, asyncio) is imported only by a run that judges
    from medvidbench.core.judge.client import Judge

Progress = Callable[[str, int, int], None]
_EXAMPLES = 3
_EXAMPLE_CHARS = 200


class Options(msgspec.Struct, frozen=True):
    """What an evaluation computes besides the metrics.

    Attributes:
        similarity: Also compute the offline caption-similarity diagnostic (slow: it embeds
            every caption answer and reference).
        bootstrap: Replicates of a cluster bootstrap for 95 % intervals (None: no intervals).
        seed: The bootstrap's seed.
        per_item: Also keep the per-item evidence (:mod:`medvidbench.core.evidence`) on the
            report (``Report.evidence``).
        secret_seed: The seed is a secret (a server's, for hidden labels): the statistics
            say so (``seed_secret``), and :func:`~medvidbench.core.statistics.public` leaves
            the seed out of what is shown.
    """

    similarity: bool = False
    bootstrap: int | None = None
    seed: int = 0
    per_item: bool = False
    secret_seed: bool = False


class Plan(msgspec.Struct):
    """What one evaluation scores (the *plan* stage's outcome).

    Attributes:
        benchmark: The benchmark definition.
        rules: The profile scored under.
        gt: The test set.
        matched: The submission, matched to the test set and valid.
        by_task: Each task's test-set indices, in test order.
        selected: The tasks to report, in the benchmark's order (missing ones included).
        judged: The judged tasks the submission answers in full (what a judge would judge).
        ctx: The scorers' context, the submission's scoring options in it.
    """

    benchmark: Benchmark
    rules: Profile
    gt: TestSet
    matched: MatchedSubmission
    by_task: dict[str, list[int]]
    selected: list[str]
    judged: list[str]
    ctx: Context

    def inputs(self, task: str) -> tuple[list[Any], list[Any]]:
        """A task's test items and the submission's answers to them."""
        return _inputs(task, self.gt, self.matched, self.by_task)


class Scored(msgspec.Struct):
    """The rule-based stage's outcome: each scored task's result (its per-sample outcomes
    kept) and every selected task's summary."""

    results: list[TaskResult]
    per_task: dict[str, dict[str, Any]]
    timings: dict[str, float] = msgspec.field(default_factory=dict)


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
    per_item: bool = False,
) -> Report:
    """Score a submission on every task of ``benchmark`` it answers: :func:`plan`, then
    :func:`score` while :func:`start_judging` runs, then :func:`assemble`.

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
        per_item: Also keep the per-item evidence on the report (``Report.evidence``).

    Raises:
        InvalidSubmissionError: when the prediction file is invalid.
        UsageError: for an unknown profile or task name.
    """
    began = time.monotonic()
    planned = plan(benchmark, predictions, ground_truth, profile, tasks, ctx, options)
    # The judge (network-bound) starts first, on its own thread, and rule-based scoring
    # (CPU-bound) runs meanwhile: the first request leaves at once instead of after scoring.
    judging = start_judging(planned, judge, judge_progress) if judge is not None else None
    scored = score(planned, progress, on_result)
    judged = None
    if judge is not None and judging is not None:
        judged = finish_judging(judging, judge, began)
    return assemble(planned, scored, judged, Options(similarity, bootstrap, seed, per_item))


def plan(
    benchmark: Benchmark,
    predictions: MatchedSubmission | str | Path | bytes,
    ground_truth: TestSet | str | Path | bytes,
    profile: str | None = None,
    tasks: Sequence[str] | None = None,
    ctx: Context | None = None,
    options: Mapping[str, Any] | None = None,
) -> Plan:
    """Load and match what is not loaded yet, and decide which tasks are scored how.

    Raises:
        InvalidSubmissionError: when the prediction file is invalid.
        UsageError: for an unknown profile or task name.
    """
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
    judged = [
        t
        for t in selected
        if t in judged_scorers and matched.report.coverage[t].status == "complete"
    ]
    if options:
        benchmark.check_option_names(options)
    ctx = ctx or Context(embedder_factory=benchmark.embedder)
    ctx.options = {**ctx.options, **matched.options, **(options or {})}
    if options:
        matched.report.settle(options)
    return Plan(benchmark, rules, gt, matched, by_task, selected, judged, ctx)


def score(
    planned: Plan,
    progress: Progress | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
) -> Scored:
    """Score every rule-based task the submission answers in full; the others are reported
    as missing or as waiting for the judge."""
    scorers = planned.benchmark.scorers()
    coverage = planned.matched.report.coverage
    out = Scored([], {})
    for n, task in enumerate(planned.selected, start=1):
        if coverage[task].status != "complete":
            out.per_task[task] = {"status": "missing", "count": coverage[task].expected}
        elif task in scorers:
            cpu_budget.check()
            started = time.perf_counter()
            result = scorers[task].evaluate(*planned.inputs(task), planned.rules, planned.ctx)
            out.timings[task] = time.perf_counter() - started
            out.results.append(result)
            if on_result is not None:
                on_result(result)
            out.per_task[task] = {
                "status": "scored",
                **result.diagnostics,
                "unparsed_examples": _unparsed(result, planned.gt, planned.matched),
                "not_scored": _not_scored(result),
            }
        else:
            out.per_task[task] = {"status": "pending judge", "count": coverage[task].expected}
        if progress:
            progress(task, n, len(planned.selected))
    return out


def assemble(
    planned: Plan,
    scored: Scored,
    judged: Judged | None = None,
    options: Options | None = None,
    prior: Mapping[str, Any] | None = None,
) -> Report:
    """The report: rule-based and judged results merged, metrics, intervals.

    ``prior`` is the bootstrap of an earlier report of the same rule-based results (a
    ``to_dict(with_replicates=True)`` document with the same seed and replicate count): the
    intervals of metrics computed from those results alone are taken from it, not drawn again.
    """
    options = options or Options()
    scorers = planned.benchmark.scorers()
    judged_scorers = planned.benchmark.judged_scorers()
    results = list(scored.results)
    # the scorer of each result (its linearisation, for intervals)
    scored_by: list[TaskScorer[Any] | JudgedScorer[Any]] = [scorers[r.task] for r in results]
    per_task = {task: dict(info) for task, info in scored.per_task.items()}
    timings = dict(scored.timings)
    for result in judged.results if judged is not None else []:
        results.append(result)
        scored_by.append(judged_scorers[result.task])
        info = per_task[result.task]
        if info["status"] == "scored":  # DVC: the rule-based part is already there
            info["judge"] = result.diagnostics
        else:
            info.update({"status": "scored", **result.diagnostics})  # or "judge failed"
    if judged is not None:
        timings.update(judged.timings)
    similar = None
    if options.similarity:
        started = time.perf_counter()
        similar = _similarity(judged_scorers, planned)
        timings["similarity"] = time.perf_counter() - started
    metrics = metrics_of(planned.benchmark, results)
    statistics = None
    if options.bootstrap:
        started = time.perf_counter()
        rule_based = len(scored.results)
        statistics = _statistics(planned, results, scored_by, metrics, options, prior, rule_based)
        timings["bootstrap"] = time.perf_counter() - started
    matched, benchmark = planned.matched, planned.benchmark
    evidence = None
    if options.per_item:
        from medvidbench.core.evidence import gather

        judge_id = (judged.provenance or {}).get("config_id", "") if judged is not None else ""
        evidence = gather(
            benchmark, planned.gt.samples, results, planned.rules.name, planned.gt.sha256, judge_id
        )
    return Report(
        metrics=metrics,
        per_dataset=per_dataset_of(results),
        per_task=per_task,
        profile=planned.rules.name,
        scorer_version=benchmark.scorer_version,
        judge=judged.provenance if judged is not None else None,
        missing_tasks=matched.report.missing_tasks,
        submission=matched.report.summary(),
        ground_truth={"sha256": planned.gt.sha256, "samples": len(planned.gt)},
        timings=timings,
        similarity=similar,
        benchmark=benchmark.slug,
        statistics=statistics,
        per_group=per_group_of(
            benchmark, planned.gt.samples, list(zip(scored_by, results, strict=True)), planned.rules
        ),
        evidence=evidence,
    )


def _statistics(
    planned: Plan,
    results: list[TaskResult],
    scored_by: list[TaskScorer[Any] | JudgedScorer[Any]],
    metrics: Mapping[str, float | None],
    options: Options,
    prior: Mapping[str, Any] | None,
    rule_based: int,
) -> dict[str, Any]:
    """Every computed metric's bootstrap interval, clusters per the benchmark's rule; those of
    metrics of the first ``rule_based`` results alone are reused from ``prior`` when it holds
    them (each replicate is a function of the metric's own sums and of (clusters, replicates,
    seed) alone, so reusing one is drawing it again)."""
    from medvidbench.core.statistics import Bootstrap, Design, bootstrap

    benchmark, rules = planned.benchmark, planned.rules
    parts = [
        scorer.linearise(result.samples, rules)
        for scorer, result in zip(scored_by, results, strict=True)
    ]
    uncertainty = benchmark.uncertainty
    design = Design.build(parts, [uncertainty.cluster_of(item) for item in planned.gt.samples])
    if uncertainty.derived_formulas is not None:
        design.formulas.update(uncertainty.derived_formulas(dict(design.formulas)))
    keys = [k for k in benchmark.metric_keys if metrics.get(k) is not None and k in design.formulas]
    reusable = {k for part in parts[:rule_based] for k in part.formulas}
    stamp = (options.bootstrap, options.seed, len(design.clusters))
    if prior is None or Bootstrap.stamp(prior) != stamp:
        reusable = set()
    else:
        reusable &= set(prior["keys"])
    fresh = [k for k in keys if k not in reusable]
    bounds = {m.key: m.bounds for m in benchmark.metrics}
    drawn = bootstrap(
        design, fresh, uncertainty.cluster_rule, options.bootstrap or 0, options.seed, bounds=bounds
    )
    out = drawn.to_dict(with_replicates=True)
    if options.secret_seed:
        out["seed_secret"] = True
    if not reusable & set(keys):
        return out
    import base64

    import numpy as np

    assert prior is not None
    values = np.empty((drawn.values.shape[0], len(keys)))
    old = Bootstrap.aligned(prior, keys)
    for j, key in enumerate(keys):
        values[:, j] = old[:, j] if key in reusable else drawn.values[:, fresh.index(key)]
    intervals = {**prior["intervals"], **out["intervals"]}
    out["intervals"] = {k: intervals[k] for k in keys}
    clusters = {**prior.get("metric_clusters", {}), **out["metric_clusters"]}
    out["metric_clusters"] = {k: clusters[k] for k in keys if k in clusters}
    widened = set(prior.get("widened", [])) & reusable | set(out["widened"])
    out["widened"] = [k for k in keys if k in widened]
    out["keys"] = keys
    out["values"] = base64.b64encode(values.astype("<f4").tobytes()).decode()
    return out


def _inputs(
    task: str, gt: TestSet, matched: MatchedSubmission, by_task: dict[str, list[int]]
) -> tuple[list[Any], list[Any]]:
    samples = [gt.samples[i] for i in by_task[task]]
    return samples, [matched.predictions[i] or "" for i in by_task[task]]


def _similarity(judged_scorers: Mapping[str, JudgedScorer[Any]], planned: Plan) -> dict[str, Any]:
    """The similarity diagnostic of every judged scorer that offers one (what it is: its
    ``similarity_about``)."""
    out: dict[str, Any] = {}
    for task, scorer in judged_scorers.items():
        key = scorer.similarity_key
        if key is None:
            continue
        out.setdefault("about", scorer.similarity_about)
        complete = (
            task in planned.selected and planned.matched.report.coverage[task].status == "complete"
        )
        out[key] = scorer.similarity(*planned.inputs(task), planned.ctx) if complete else None
    return out


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
