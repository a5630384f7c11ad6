"""Training rewards from a benchmark's own scorers: the contract and MedGRPO's normalisation.

A benchmark that offers rewards declares a :class:`RewardSpec` (``Benchmark.rewards``): per
task, which terms a completion earns (a rule-based score read from the per-sample values its
scorer produces under the corrected profile, a similarity, an LLM-judge score) and whether the
task's reward is gated by the answer's format. :mod:`medvidbench.rewards` runs the scorers; this
module holds what is pure: the term definitions, the statistics file and the normaliser

    r = 1 / (1 + exp(-k (x - p50) / IQR)),   IQR = p75 - p25,

with p25, p50 and p75 taken per (task, dataset, term) from a reference model's raw rewards.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from medvidbench.core.errors import UsageError
from medvidbench.core.scoring import SampleResult

STATS_FORMAT = "medvidbench-reward-stats"
STATS_VERSION = 1
DEFAULT_K = 3.0
MIN_SAMPLES = 20  # a (task, dataset) group with fewer reference samples uses its task's pool
MIN_SCALE = 1e-6  # an IQR below this falls back to the standard deviation, then to 1

# The terms a completion's reward is made of.
SCORE, SIMILARITY, JUDGE = "score", "similarity", "judge"


@dataclass(frozen=True, slots=True)
class TaskReward:
    """How one task's completions earn their reward.

    Attributes:
        task: The task key.
        score: The rule-based raw reward (0-1) from one sample's result under the reward
            profile; None for a task with no rule-based part (a free-text caption).
        gated: Whether the normalised rule-based term is multiplied by the format term (1 when
            the answer could be read, else 0): localisation tasks, so that an unreadable answer
            earns nothing however hard its dataset is.
        similarity: ``(items, texts, embedder) -> array`` of 0-1 caption similarities; None for
            a task with no caption part.
        judged: Whether the benchmark's judged scorer gives this task a per-sample 1-5 score.
        about: One line for the docs: what the rule-based raw reward is.
        mean_of: The metrics that equal the mean of ``score`` over the task's samples under the
            reward profile (empty when the metric is not such a mean, such as a balanced
            accuracy).
        guard: ``(items, texts, options) -> array`` of 0-1 multipliers for cheap answers the
            scorer would pay for (an answer that names every class, a caption padded far beyond
            the reference's length); ``options`` are the batch's scoring options (what
            ``RewardSpec.batch_options`` gives, such as the class lists the rows carry); applied
            to the raw and the normalised reward alike. None: 1.
        variants: Alternative rule-based raw rewards by name (TAL ``iou``: the continuous
            set-level IoU), ``(items, texts, results) -> array``, chosen with the rewarder's
            ``variants`` option; statistics record the variants they were fitted with.
    """

    task: str
    score: Callable[[SampleResult], float] | None = None
    gated: bool = False
    similarity: Callable[[Sequence[Any], Sequence[str], Any], np.ndarray] | None = None
    judged: bool = False
    about: str = ""
    mean_of: tuple[str, ...] = ()
    guard: Callable[[Sequence[Any], Sequence[str], Mapping[str, Any]], np.ndarray] | None = None
    variants: Mapping[
        str, Callable[[Sequence[Any], Sequence[str], Sequence[SampleResult]], np.ndarray]
    ] = field(default_factory=dict)

    @property
    def terms(self) -> tuple[str, ...]:
        out = []
        if self.score is not None:
            out.append(SCORE)
        if self.similarity is not None:
            out.append(SIMILARITY)
        if self.judged:
            out.append(JUDGE)
        return tuple(out)


ItemT = TypeVar("ItemT")


def _question(item: Any) -> dict[str, Any]:
    """The default prompt: the item's ``question`` (an item without one needs the benchmark's
    own ``prompt``)."""
    question = getattr(item, "question", None)
    if not isinstance(question, str):
        raise TypeError(
            f"a {type(item).__name__} item has no 'question' text for the default reward "
            "prompt: the benchmark's RewardSpec must give prompt="
        )
    return {"question": question, "media": {}}


def _no_visuals(item: Any, record: Mapping[str, Any]) -> dict[str, list[Any]]:
    return {"images": [], "videos": []}


@dataclass(frozen=True, slots=True)
class RewardSpec(Generic[ItemT]):
    """A benchmark's rewards: its tasks' terms and how a training row carries its item.

    Attributes:
        profile: The profile whose per-sample semantics the rewards use (the corrected one:
            an unreadable answer is 0, never skipped).
        tasks: The :class:`TaskReward` of every task that has one.
        encode_item: ``(item, extras) -> dict``: the ground-truth column's content for a row.
        decode_item: ``(dict) -> (item, extras)``; raises ``ValueError`` saying what is wrong.
        batch_options: ``(items, extras) -> scoring options`` the scorers read for a batch
            (MedVidBench: the label sets of classes a test set would derive from its labels).
        row_extras: ``(items of a training file) -> extras per item`` computed once over the
            whole file by the preparation command.
        prompt: ``(item) -> {"question": str, "media": {...}}`` for the preparation command.
        visuals: ``(item, record) -> {"images": [...], "videos": [...]}``: the pixels a
            vision model sees for the item, as the training file names them (``record`` is
            the item's record in that file, a plain dict); an image is a path, a video a
            ``{"video": path or [frame paths]}``. The verl rows carry them with ``<image>`` /
            ``<video>`` placeholders in the prompt.
        board_format: Whether the rewarder, by default, also requires a rule-based answer to be
            readable under the benchmark's default (board) profile: on where the board reads
            answers more strictly than the reward profile (MedVidBench: ``leaderboard-v1``'s
            published parsers vs ``strict-v2``), so that drifting into a format the board
            scores 0 costs reward.
    """

    profile: str
    tasks: Mapping[str, TaskReward]
    encode_item: Callable[[ItemT, Mapping[str, Any]], dict[str, Any]]
    decode_item: Callable[[Mapping[str, Any]], tuple[ItemT, dict[str, Any]]]
    batch_options: Callable[[Sequence[ItemT], Sequence[Mapping[str, Any]]], dict[str, Any]] = (
        lambda items, extras: {}
    )
    row_extras: Callable[[Sequence[ItemT]], list[dict[str, Any]]] = lambda items: [
        {} for _ in items
    ]
    prompt: Callable[[ItemT], dict[str, Any]] = _question
    visuals: Callable[[ItemT, Mapping[str, Any]], dict[str, list[Any]]] = _no_visuals
    board_format: bool = False


def logistic(x: np.ndarray, p50: float, scale: float, k: float) -> np.ndarray:
    """MedGRPO's normalisation of raw rewards ``x`` (0.5 at the median, in (0, 1))."""
    with np.errstate(over="ignore"):  # an infinite exponent is the right limit (0 or 1)
        z = np.clip(-k * (np.asarray(x, dtype=np.float64) - p50) / scale, -700.0, 700.0)
    out: np.ndarray = 1.0 / (1.0 + np.exp(z))
    return out


@dataclass(frozen=True, slots=True)
class Quantiles:
    """A reference model's raw rewards in one group, summarised."""

    n: int
    p25: float
    p50: float
    p75: float
    std: float

    @classmethod
    def of(cls, values: Sequence[float] | np.ndarray) -> Quantiles:
        v = np.asarray(values, dtype=np.float64)
        p25, p50, p75 = (float(q) for q in np.quantile(v, (0.25, 0.5, 0.75)))
        return cls(int(v.size), p25, p50, p75, float(v.std()))

    @property
    def iqr(self) -> float:
        return self.p75 - self.p25

    def scale(self) -> tuple[float, str]:
        """The divisor and which rule gave it: the IQR, else the standard deviation, else 1."""
        if self.iqr > MIN_SCALE:
            return self.iqr, "iqr"
        if self.std > MIN_SCALE:
            return self.std, "std"
        return 1.0, "unit"


@dataclass(slots=True)
class RewardStats:
    """Normalisation statistics per (task, dataset, term), fitted on a reference model.

    ``dataset`` ``*`` is the pool of all of a task's datasets, used for a group with fewer than
    ``min_samples`` reference samples or a dataset the reference never saw.
    """

    benchmark: str
    scorer_version: str
    profile: str
    groups: dict[tuple[str, str, str], Quantiles]
    min_samples: int = MIN_SAMPLES
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def fit(
        cls,
        benchmark: str,
        scorer_version: str,
        profile: str,
        values: Mapping[tuple[str, str, str], Sequence[float]],
        min_samples: int = MIN_SAMPLES,
        provenance: Mapping[str, Any] | None = None,
    ) -> RewardStats:
        """Quantiles per group and per task pool from raw rewards keyed (task, dataset, term)."""
        pools: dict[tuple[str, str, str], list[float]] = {}
        groups: dict[tuple[str, str, str], Quantiles] = {}
        for (task, dataset, term), vs in sorted(values.items()):
            if len(vs):
                groups[(task, dataset, term)] = Quantiles.of(vs)
                pools.setdefault((task, "*", term), []).extend(float(v) for v in vs)
        for key, vs in pools.items():
            groups[key] = Quantiles.of(vs)
        return cls(benchmark, scorer_version, profile, groups, min_samples, dict(provenance or {}))

    def lookup(self, task: str, dataset: str, term: str) -> tuple[Quantiles | None, str]:
        """The group's statistics and where they came from (``dataset``, ``pool`` or ``none``)."""
        own = self.groups.get((task, dataset, term))
        if own is not None and own.n >= self.min_samples:
            return own, "dataset"
        pool = self.groups.get((task, "*", term))
        if pool is not None:
            return pool, "pool"
        return None, "none"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": STATS_FORMAT,
            "version": STATS_VERSION,
            "benchmark": self.benchmark,
            "scorer_version": self.scorer_version,
            "profile": self.profile,
            "min_samples": self.min_samples,
            "provenance": self.provenance,
            "groups": [
                {
                    "task": t,
                    "dataset": d,
                    "term": term,
                    "n": q.n,
                    "p25": q.p25,
                    "p50": q.p50,
                    "p75": q.p75,
                    "std": q.std,
                }
                for (t, d, term), q in sorted(self.groups.items())
            ],
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, data: Any, where: str = "reward statistics") -> RewardStats:
        """Read a statistics document; every problem raises :class:`UsageError` naming it."""
        if not isinstance(data, dict) or data.get("format") != STATS_FORMAT:
            raise UsageError(f"{where}: not a reward statistics file (format {STATS_FORMAT!r})")
        if data.get("version") != STATS_VERSION:
            raise UsageError(
                f"{where}: statistics file version {data.get('version')!r}; this release reads "
                f"version {STATS_VERSION}: fit them again with `medvidbench rewards fit`"
            )
        groups: dict[tuple[str, str, str], Quantiles] = {}
        for i, g in enumerate(data.get("groups") or []):
            try:
                q = Quantiles(
                    int(g["n"]), float(g["p25"]), float(g["p50"]), float(g["p75"]), float(g["std"])
                )
                key = (str(g["task"]), str(g["dataset"]), str(g["term"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise UsageError(f"{where}: group {i} is malformed ({exc!r})") from None
            if not all(math.isfinite(v) for v in (q.p25, q.p50, q.p75, q.std)) or q.p25 > q.p75:
                raise UsageError(f"{where}: group {i} has non-finite or unordered quantiles")
            groups[key] = q
        try:
            return cls(
                str(data["benchmark"]),
                str(data["scorer_version"]),
                str(data["profile"]),
                groups,
                int(data.get("min_samples", MIN_SAMPLES)),
                dict(data.get("provenance") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{where}: missing or malformed field {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> RewardStats:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"cannot read reward statistics {path}: {exc.strerror}") from None
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            raise UsageError(f"{path}: not JSON ({exc})") from None
        return cls.from_dict(data, str(path))


@dataclass(slots=True)
class Normaliser:
    """Applies MedGRPO's logistic normalisation with fitted statistics.

    A term whose group has no statistics at all (a task the reference never answered) passes
    its raw value through unchanged; :meth:`apply` says so in its ``source``.
    """

    stats: RewardStats
    k: float = DEFAULT_K

    def __post_init__(self) -> None:
        if not (math.isfinite(self.k) and self.k > 0):
            raise UsageError(f"k must be a positive number; got {self.k}")

    def apply(self, task: str, dataset: str, term: str, raw: np.ndarray) -> tuple[np.ndarray, str]:
        q, source = self.stats.lookup(task, dataset, term)
        if q is None:
            return np.asarray(raw, dtype=np.float64), source
        scale, rule = q.scale()
        return logistic(raw, q.p50, scale, self.k), f"{source}/{rule}"
