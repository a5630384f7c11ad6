"""An evaluation's outcome, and the two summaries it is assembled from: every declared metric
(null unless computed) and the per-dataset breakdown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from medvidbench.core.benchmark import Benchmark
from medvidbench.core.scoring import TaskResult
from medvidbench.version import __version__

if TYPE_CHECKING:  # gathered only for --per-item (core.evaluation imports it then)
    from medvidbench.core.evidence import Evidence


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
        per_group: Per breakdown the benchmark declares (``Benchmark.breakdowns``), per group,
            each metric computed on that group's items and their count (``items``).
        model: The model's name, when the caller gave one (``evaluate --model-name``).
        evidence: The per-item evidence, when asked for (:mod:`medvidbench.core.evidence`);
            :meth:`to_dict` writes it as ``per_item``.
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
    per_group: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    model: str = ""
    evidence: Evidence | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-serialisable data (``per_item``: the evidence, when kept)."""
        evidence, self.evidence = self.evidence, None
        try:
            out = asdict(self)
        finally:
            self.evidence = evidence
        del out["evidence"]
        if evidence is not None:
            out["per_item"] = evidence.to_dict()
        return out


def metrics_of(benchmark: Benchmark, results: list[TaskResult]) -> dict[str, float | None]:
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


def per_dataset_of(results: list[TaskResult]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for result in results:
        for dataset, values in result.per_dataset.items():
            entry = out.setdefault(dataset, {"tasks": {}})
            entry["tasks"].setdefault(result.task, {}).update(values)
            entry.update({k: values.get(k) for k in result.metrics})
    return dict(sorted(out.items()))


def per_group_of(
    benchmark: Benchmark,
    samples: Sequence[Any],
    scored: Sequence[tuple[Any, TaskResult]],
    profile: Any,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Each breakdown's groups, each metric computed by its scorer on the group's samples (the
    same per-sample sums as the headline), with the group's item count."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name, group_of in benchmark.breakdowns.items():
        groups: dict[str, dict[str, Any]] = {}
        for scorer, result in scored:
            members: dict[str, list[Any]] = {}
            for r in result.samples:
                members.setdefault(group_of(samples[r.index]), []).append(r)
            for group, rs in members.items():
                entry = groups.setdefault(group, {"items": 0})
                entry.update(scorer.compute(rs, profile))
                entry["items"] += len(rs)
        out[name] = dict(sorted(groups.items()))
    return out
