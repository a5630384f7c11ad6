"""The scorer contract every benchmark's tasks follow, and what a scorer returns.

A scorer is a thin object over pure per-task functions (``parse``, ``score``, ``aggregate``).
It receives the test samples of its task, the matched prediction texts and a profile, and
returns a :class:`TaskResult` that keeps every sample's :class:`SampleResult` (rewards and
bootstrap intervals are computed from those). A benchmark hands its scorers to the evaluator
through :attr:`medvidbench.core.benchmark.Benchmark.scorers`; what a scorer needs beyond its
inputs (a sentence embedder) reaches it through the :class:`Context`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import TYPE_CHECKING, Any, Protocol

from medvidbench.core.benchmark import Profile

if TYPE_CHECKING:
    from medvidbench.core.embeddings import Embedder
    from medvidbench.core.judge.cache import Judgement
    from medvidbench.core.judge.client import JudgeRequest
    from medvidbench.core.statistics import Linearised


@dataclass(slots=True)
class SampleResult:
    """One sample's outcome.

    Attributes:
        index: The sample's position in the test set.
        dataset: Its source dataset.
        parsed: Whether the prediction could be read (the parse-rate numerator).
        values: Per-sample numbers by metric key; None when the sample is excluded from the mean
            (a v1 skip rule), which is reported rather than hidden.
        note: Why it was excluded or not parsed, when that is useful to a researcher.
        extra: Scorer-specific facts about the sample that a diagnostic aggregates (NAP: whether
            the answer named a class exactly); None for most scorers.
    """

    index: int
    dataset: str
    parsed: bool
    values: dict[str, float] | None
    note: str = ""
    extra: dict[str, Any] | None = None


@dataclass(slots=True)
class TaskResult:
    """A task's metrics, overall and per dataset, with diagnostics."""

    task: str
    metrics: dict[str, float | None]
    per_dataset: dict[str, dict[str, float | int | None]]
    diagnostics: dict[str, Any]
    samples: list[SampleResult] = field(default_factory=list)


@dataclass(slots=True)
class Context:
    """What a scorer may need beyond samples and texts; loaded lazily.

    The evaluator builds it from the benchmark (``Benchmark.embedder``); tests inject their own.
    ``options`` are the submission's scoring options (declared in its file, or given on the
    command line: ``--option parser=old``), which a benchmark's scorers may read.
    """

    embedder_factory: Callable[[], Embedder] | None = None
    _embedder: Embedder | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def embedder(self) -> Embedder:
        if self._embedder is None:
            from medvidbench.core.embeddings import default_embedder

            self._embedder = (self.embedder_factory or default_embedder)()
        return self._embedder


class TestItem(Protocol):
    """What the evaluator reads of a benchmark's test item (scorers read more)."""

    @property
    def index(self) -> int: ...
    @property
    def sample_id(self) -> str: ...
    @property
    def task(self) -> str: ...
    @property
    def dataset(self) -> str: ...


class TestSet(Protocol):
    """A loaded, validated test set: items in file order, ``items[i].index == i``."""

    @property
    def samples(self) -> Sequence[Any]: ...
    @property
    def sha256(self) -> str: ...
    def __len__(self) -> int: ...


class Scorer(Protocol):
    """A rule-based task's scoring entry point (what the evaluator calls)."""

    task: str
    metric_keys: tuple[str, ...]

    def evaluate(
        self, samples: Sequence[Any], texts: Sequence[str], profile: Profile, ctx: Context
    ) -> TaskResult: ...


class TaskScorer(ABC):
    """The scorer contract: a thin class over a task's pure functions.

    A task says how to read one answer (:meth:`parse`), how to score one parsed answer against
    its item (:meth:`score_sample`) and how per-sample results become the task's metrics
    (:meth:`aggregate`); :meth:`evaluate`, the one loop every task shares, calls them in that
    order and keeps every :class:`SampleResult`. Rewards and bootstrap intervals are computed
    from the same :meth:`score_sample` results the board's numbers come from.

    A task whose parsing is cheaper in bulk (NAP embeds every unmatched answer in one batch)
    overrides :meth:`parse_all` instead of :meth:`parse`.
    """

    task: str
    metric_keys: tuple[str, ...]

    def parse(self, text: str, item: Any, profile: Profile) -> Any:
        """Read one answer; never raises (an unreadable answer is a value, such as ``[]``)."""
        raise NotImplementedError(f"{type(self).__name__} must define parse or parse_all")

    def parse_all(
        self, items: Sequence[Any], texts: Sequence[str], profile: Profile, ctx: Context
    ) -> list[Any]:
        """Read every answer of the task (default: :meth:`parse` one at a time)."""
        return [self.parse(t, item, profile) for item, t in zip(items, texts, strict=True)]

    @abstractmethod
    def score_sample(self, parsed: Any, item: Any, profile: Profile) -> SampleResult:
        """One item's outcome: its per-sample metric values, or None with the reason."""

    @abstractmethod
    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        """The task's metrics, overall and per dataset, from its per-sample results."""

    def linearise(self, results: list[SampleResult], profile: Profile) -> Linearised:
        """The task's metrics as ratios of per-sample sums, for bootstrap intervals (default:
        each metric is the mean of its per-sample value over the samples that have one)."""
        from medvidbench.core.statistics import sample_means

        return sample_means(results, self.metric_keys)

    def evaluate(
        self, samples: Sequence[Any], texts: Sequence[str], profile: Profile, ctx: Context
    ) -> TaskResult:
        parsed = self.parse_all(samples, texts, profile, ctx)
        results = [
            self.score_sample(p, item, profile) for p, item in zip(parsed, samples, strict=True)
        ]
        return self.aggregate(results, profile)


class JudgePlan(Protocol):
    """The judge requests one task needs (built before any request is sent)."""

    @property
    def requests(self) -> Sequence[JudgeRequest]: ...


class JudgedScorer(Protocol):
    """A task (or part of one) an LLM judge scores: plan the requests, then aggregate."""

    task: str
    metric_keys: tuple[str, ...]

    def plan(
        self, samples: Sequence[Any], texts: Sequence[str], profile: Profile, judge_id: str
    ) -> JudgePlan: ...

    def aggregate(
        self, plan: Any, judged: dict[str, Judgement], profile: Profile
    ) -> TaskResult: ...


def mean_or_none(values: Sequence[float]) -> float | None:
    """The mean, or None for no values (never a silent 0)."""
    return fmean(values) if values else None


def diagnostics(results: Sequence[SampleResult]) -> dict[str, Any]:
    """Counts every task reports: samples, how many were scored, and the parse rate."""
    count = len(results)
    parsed = sum(r.parsed for r in results)
    return {
        "count": count,
        "evaluated": sum(r.values is not None for r in results),
        "parsed": parsed,
        "parse_rate": parsed / count if count else None,
    }


def group_by_dataset(results: Sequence[SampleResult]) -> dict[str, list[SampleResult]]:
    out: dict[str, list[SampleResult]] = {}
    for r in results:
        out.setdefault(r.dataset, []).append(r)
    return dict(sorted(out.items()))


def micro_mean(results: Sequence[SampleResult], key: str) -> float | None:
    """Mean of a per-sample value over the samples not excluded."""
    return mean_or_none([r.values[key] for r in results if r.values is not None])


def balanced_accuracy(rows: Sequence[dict[str, float]], prefix: str) -> float:
    """Mean over the parts named ``prefix + name`` of each part's accuracy over the rows that
    count it (SA's aspects, CVS's components). 0.0 when nothing was countable: the task was
    answered, so it is scored, as the published leaderboard scores it."""
    per: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith(prefix):
                per.setdefault(key, []).append(value)
    return fmean([sum(v) / len(v) for v in per.values()]) if per else 0.0


def mean_abs_error(rows: Sequence[dict[str, float]]) -> float | None:
    """Mean of the ``ae:`` entries of per-sample rows."""
    return mean_or_none([v for row in rows for k, v in row.items() if k.startswith("ae:")])


def balanced_task_result(
    task: str, key: str, prefix: str, secondary: str, results: list[SampleResult]
) -> TaskResult:
    """Shared aggregation of SA and CVS: per dataset a balanced accuracy, the secondary
    accuracy (level or rating) and the MAE; overall the mean over datasets."""
    per_dataset: dict[str, dict[str, float | int | None]] = {}
    for d, rs in group_by_dataset(results).items():
        rows = [r.values for r in rs if r.values is not None]
        per_dataset[d] = {
            key: balanced_accuracy(rows, prefix),
            "count": len(rs),
            "evaluated": len(rows),
            f"{secondary}_accuracy": mean_or_none([row[secondary] for row in rows]),
            "mae": mean_abs_error(rows),
        }
    overall = mean_or_none([float(v[key] or 0.0) for v in per_dataset.values()])
    rows = [r.values for r in results if r.values is not None]
    diag = diagnostics(results)
    diag[f"{secondary}_accuracy"] = mean_or_none([row[secondary] for row in rows])
    diag["mae"] = mean_abs_error(rows)
    return TaskResult(task, {key: overall}, per_dataset, diag, results)


def balanced_linearised(
    task: str, key: str, prefix: str, results: Sequence[SampleResult]
) -> Linearised:
    """:func:`balanced_task_result`'s metric as ratios of sums: per dataset and part, the part's
    correct count over its counted samples, weighted 1 / (datasets x the dataset's parts); a
    dataset with no countable part enters as 0, as the aggregate counts it."""
    from medvidbench.core.statistics import Linearised, Ratio

    out = Linearised()
    parts: dict[str, set[str]] = {}
    for r in results:
        feats: dict[str, float] = {f"{task}/{r.dataset}/#samples": 1.0}
        parts.setdefault(r.dataset, set())
        for name, value in (r.values or {}).items():
            if name.startswith(prefix):
                feats[f"{task}/{r.dataset}/{name}"] = float(value)
                feats[f"{task}/{r.dataset}/{name}#n"] = 1.0
                parts[r.dataset].add(name)
        out.rows.append((r.index, feats))
    terms = []
    for dataset, names in sorted(parts.items()):
        share = 1.0 / len(parts)
        if not names:
            terms.append(Ratio(f"{task}/#zero", f"{task}/{dataset}/#samples", share))
        for name in sorted(names):
            base = f"{task}/{dataset}/{name}"
            terms.append(Ratio(base, f"{base}#n", share / len(names)))
    out.formulas[key] = terms
    return out
