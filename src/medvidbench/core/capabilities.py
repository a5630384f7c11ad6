"""A benchmark's optional capabilities: what it may offer beyond the kernel.

Each is a small typed record a :class:`~medvidbench.core.benchmark.Benchmark` holds in a field
of its own (``presentation``, ``uncertainty``, ``judging``, ``demo``); a benchmark without one
lacks the feature, and nothing probes for attributes. (Importers, the other capability, are a
protocol in :mod:`medvidbench.core.benchmark`, beside the kernel.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from pathlib import Path

    from medvidbench.core.judge.rubric import Rubric
    from medvidbench.core.scoring import JudgedScorer, SampleResult
    from medvidbench.core.statistics import Ratio


@dataclass(frozen=True, slots=True)
class Presentation:
    """What pages, the API and the submit form show about a benchmark (all optional).

    Attributes:
        about: The About page's text (plain paragraphs separated by blank lines).
        identity: How a prediction finds its test item (for the docs and the About page).
        submission_format: One sentence on the prediction file, for the submit page.
        submission_example: A short example prediction file (JSON), shown on the submit page.
        citation: BibTeX, or "".
        links: Display name to URL (paper, dataset, code).
        licence: The licence of the benchmark's data.
        reported_results: ``() -> [{"model", "organisation", "metrics", ...}]``: published
            results shown as reported rows.
        item_drawing: ``(item, SampleResult | None) -> {"width", "height", "truth",
            "predicted", ...}``: the boxes a public-label benchmark's item browser draws
            (None: no drawing).
    """

    about: str = ""
    identity: str = ""
    submission_format: str = "a JSON file of predictions."
    submission_example: str = ""
    citation: str = ""
    links: Mapping[str, str] = field(default_factory=dict)
    licence: str = ""
    reported_results: Callable[[], Sequence[Mapping[str, Any]]] = tuple
    item_drawing: Callable[[Any, SampleResult | None], dict[str, Any] | None] | None = None


ItemT = TypeVar("ItemT")


def _each_item(item: Any) -> str:
    return str(item.index)


@dataclass(frozen=True, slots=True)
class Uncertainty(Generic[ItemT]):
    """How bootstrap intervals resample a benchmark's test set.

    Attributes:
        cluster_of: ``(item) -> cluster id``: the test items a bootstrap resamples together
            (MedVidBench: every question about one source video); default: each item alone.
        cluster_rule: One sentence naming that rule, stamped on every interval.
        derived_formulas: ``(metric formulas) -> more formulas``: the derived metrics as ratios
            of sums (:mod:`medvidbench.core.statistics`), so they get intervals too.
    """

    cluster_of: Callable[[ItemT], str] = _each_item
    cluster_rule: str = "each test item on its own"
    derived_formulas: Callable[[dict[str, list[Ratio]]], dict[str, list[Ratio]]] | None = None


@dataclass(frozen=True, slots=True)
class DemoData:
    """A synthetic demo test set and model answers, for a first run and for tests.

    Attributes:
        synthesise: ``(out_dir, samples, seed) -> {name: path}``: the test set
            (``ground_truth``) and one prediction file per archetype
            (``predictions_<archetype>``).
        archetypes: The model archetypes it writes, in display order.
    """

    synthesise: Callable[[Path, int | None, int], dict[str, Path]]
    archetypes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JudgedScoring:
    """The tasks (or parts of tasks) an LLM judge scores.

    Attributes:
        scorers: ``() -> {task: JudgedScorer}``.
        rubric: What the judge is asked (its version is part of the judge's configuration id).
    """

    scorers: Callable[[], Mapping[str, JudgedScorer[Any]]]
    rubric: Rubric
