"""The scorer contract every benchmark's tasks follow, and what a scorer returns.

A scorer is a thin object over pure per-task functions (``parse``, ``score``, ``aggregate``).
It receives the test samples of its task, the matched prediction texts and a profile, and
returns a :class:`TaskResult` that keeps every sample's :class:`SampleResult` (rewards and
bootstrap intervals are computed from those). A benchmark hands its scorers to the evaluator
through :attr:`medvidbench.core.benchmark.Benchmark.scorers`; what a scorer needs beyond its
inputs (a sentence embedder) reaches it through the :class:`Context`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol

from medvidbench.core import linear_re
from medvidbench.core.benchmark import ItemT, Profile
from medvidbench.core.benchmark import TestItem as TestItem  # re-exported: the contract's names
from medvidbench.core.benchmark import TestSet as TestSet

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


class TaskScorer(ABC, Generic[ItemT]):
    """The scorer contract: a thin class over a task's pure functions.

    A task says how to read one answer (:meth:`parse`), how to score one parsed answer against
    its item (:meth:`score_sample`) and how per-sample results become the task's metrics
    (:meth:`aggregate`); :meth:`evaluate`, the one loop every task shares, calls them in that
    order and keeps every :class:`SampleResult`. Rewards and bootstrap intervals are computed
    from the same :meth:`score_sample` results the board's numbers come from.

    A task whose parsing is cheaper in bulk (NAP embeds every unmatched answer in one batch)
    overrides :meth:`parse_all` instead of :meth:`parse`.

    Each metric is defined once, as ratios of per-sample sums (:meth:`linearise`, the
    ``update`` half); the headline value is those sums' ratio (:meth:`compute`, the
    ``compute`` half). A task may compute its headline another way in :meth:`aggregate` (the
    published leaderboard's own arithmetic, kept for parity), and the contract test
    (tests/test_plugins.py) checks on every task of every built-in benchmark that the two agree.
    """

    task: str
    metric_keys: tuple[str, ...]

    def parse(self, text: str, item: ItemT, profile: Profile) -> Any:
        """Read one answer; never raises (an unreadable answer is a value, such as ``[]``)."""
        raise NotImplementedError(f"{type(self).__name__} must define parse or parse_all")

    def parse_all(
        self, items: Sequence[ItemT], texts: Sequence[str], profile: Profile, ctx: Context
    ) -> list[Any]:
        """Read every answer of the task (default: :meth:`parse` one at a time)."""
        return [self.parse(t, item, profile) for item, t in zip(items, texts, strict=True)]

    @abstractmethod
    def score_sample(self, parsed: Any, item: ItemT, profile: Profile) -> SampleResult:
        """One item's outcome: its per-sample metric values, or None with the reason."""

    @abstractmethod
    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        """The task's metrics, overall and per dataset, from its per-sample results."""

    def linearise(self, results: list[SampleResult], profile: Profile) -> Linearised:
        """The task's metrics as ratios of per-sample sums, for bootstrap intervals (default:
        each metric is the mean of its per-sample value over the samples that have one)."""
        from medvidbench.core.statistics import sample_means

        return sample_means(results, self.metric_keys)

    def compute(self, results: list[SampleResult], profile: Profile) -> dict[str, float | None]:
        """Each metric from the per-sample sums of :meth:`linearise` (None: undefined)."""
        from medvidbench.core.statistics import point_values

        return point_values(self.linearise(results, profile), self.metric_keys)

    def score_all(
        self, samples: Sequence[ItemT], texts: Sequence[str], profile: Profile, ctx: Context
    ) -> list[SampleResult]:
        """Every sample's outcome (what rewards read), in the order given. The answers are
        read inside one :func:`~medvidbench.core.linear_re.budgeted` block: the parsers'
        patterns run in ``re`` first, the linear engine taking over from any that runs long."""
        with linear_re.budgeted():
            parsed = self.parse_all(samples, texts, profile, ctx)
        return [
            self.score_sample(p, item, profile) for p, item in zip(parsed, samples, strict=True)
        ]

    def evaluate(
        self, samples: Sequence[ItemT], texts: Sequence[str], profile: Profile, ctx: Context
    ) -> TaskResult:
        return self.aggregate(self.score_all(samples, texts, profile, ctx), profile)


class JudgePlan(Protocol):
    """The judge requests one task needs (built before any request is sent)."""

    @property
    def requests(self) -> Sequence[JudgeRequest]: ...


class JudgedScorer(ABC, Generic[ItemT]):
    """A task (or part of one) an LLM judge scores: plan the requests, then aggregate.

    A judged scorer may also offer an offline similarity diagnostic (never a leaderboard
    metric): it names the report key in :attr:`similarity_key` and overrides
    :meth:`similarity`.
    """

    task: str
    metric_keys: tuple[str, ...]
    similarity_key: str | None = None
    similarity_about: str = ""

    @abstractmethod
    def plan(
        self, samples: Sequence[ItemT], texts: Sequence[str], profile: Profile, judge_id: str
    ) -> JudgePlan:
        """The judge requests the task needs (built before any request is sent)."""

    @abstractmethod
    def aggregate(self, plan: Any, judged: dict[str, Judgement], profile: Profile) -> TaskResult:
        """The task's judged metrics from the judgements of its planned requests."""

    def linearise(self, results: list[SampleResult], profile: Profile) -> Linearised:
        """As :meth:`TaskScorer.linearise` (default: per-sample means)."""
        from medvidbench.core.statistics import sample_means

        return sample_means(results, self.metric_keys)

    def compute(self, results: list[SampleResult], profile: Profile) -> dict[str, float | None]:
        """As :meth:`TaskScorer.compute`: each metric from its per-sample sums."""
        from medvidbench.core.statistics import point_values

        return point_values(self.linearise(results, profile), self.metric_keys)

    def similarity(
        self, samples: Sequence[ItemT], texts: Sequence[str], ctx: Context
    ) -> float | None:
        """The similarity diagnostic (default: none)."""
        return None


def fmean(values: Iterable[float]) -> float:
    """The mean, as :func:`statistics.fmean` computes it (the exactly rounded sum over the
    count), without importing :mod:`statistics` (and ``random`` and ``fractions`` with it) on
    every cold run. Raises ZeroDivisionError for no values.

    Examples:
        >>> import statistics
        >>> fmean([0.1, 0.2, 0.7]) == statistics.fmean([0.1, 0.2, 0.7]), fmean(iter([1, 2]))
        (True, 1.5)
    """
    data = values if isinstance(values, (list, tuple)) else list(values)
    return math.fsum(data) / len(data)


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
