"""What a benchmark is: its metrics, profiles, tasks and loaders, declared in one object.

Every benchmark the package hosts, MedVidBench included, is a :class:`Benchmark` published
through the ``medvidbench.benchmarks`` entry-point group (see :mod:`medvidbench.benchmarks`).
The evaluator, the server, the pages and the command line read everything benchmark-specific
from here: which tasks exist, which metrics each produces with which direction and scale, which
profiles (named, versioned rule sets) score them and under which scorer version.

A profile is a named, versioned set of parsing and scoring rules. Changing a rule means a new
scorer version, never a silent change: every report records the benchmark, the profile and the
scorer version that produced it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import import_module
from typing import TYPE_CHECKING, Any, Literal

from medvidbench.core.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from medvidbench.core.embeddings import Embedder
    from medvidbench.core.judge.rubric import Rubric
    from medvidbench.core.rewards import RewardSpec
    from medvidbench.core.scoring import JudgedScorer, Scorer
    from medvidbench.core.statistics import Ratio
    from medvidbench.core.submission import MatchedSubmission

Scale = Literal["0-1", "1-5", "percent"]
Labels = Literal["hidden", "public"]
_SCALE_RANGE: dict[str, tuple[float, float]] = {
    "0-1": (0.0, 1.0),
    "1-5": (1.0, 5.0),
    "percent": (0.0, 100.0),
}


@dataclass(frozen=True, slots=True)
class Metric:
    """One leaderboard column; ranking, pages, charts, exports and the API all read it here.

    Attributes:
        key: Stable machine key (``tag_miou_03``), used in reports, the API and CSV headers.
        column: The display name, the board's column title (``TAG_mIoU@0.3``).
        task: The task that produces it.
        title: A short human description.
        scale: ``0-1``, ``1-5`` (LLM-judged) or ``percent``.
        judged: Whether an LLM judge produces it (null until judged).
        higher_is_better: Ranking direction.
        ranked: Whether it enters the average rank (a shown-only column does not).
        group: The column group on boards and charts (default: the task's label; required for a
            metric of no single task, ``task=""``, such as an overall average).
        board: Whether the board shows it as a column (every metric is in the API, the
            exports and the submission page).
        percent: Whether pages show a 0-1 value as a percentage (the API and exports keep
            the fraction).
    """

    key: str
    column: str
    task: str
    title: str
    scale: Scale = "0-1"
    judged: bool = False
    higher_is_better: bool = True
    ranked: bool = True
    group: str = ""
    board: bool = True
    percent: bool = False

    @property
    def bounds(self) -> tuple[float, float]:
        """The lowest and highest value the scale allows."""
        return _SCALE_RANGE[self.scale]

    def normalised(self, value: float | None) -> float | None:
        """The value on 0-1 with 1 the best, for averages and charts across scales.

        Examples:
            >>> Metric("x", "X", "t", "", "1-5").normalised(3.0)
            0.5
            >>> Metric("e", "E", "t", "", higher_is_better=False).normalised(0.25)
            0.75
        """
        if value is None:
            return None
        low, high = self.bounds
        unit = (float(value) - low) / (high - low)
        return unit if self.higher_is_better else 1.0 - unit


@dataclass(frozen=True, slots=True)
class Profile:
    """A named, versioned set of parsing and scoring rules.

    Attributes:
        name: The profile's name (``leaderboard-v1``, ``strict-v2``).
        strict: Whether the corrected definitions apply (tolerant parsing, every sample counts).
        description: One sentence for reports and the About page.
    """

    name: str
    strict: bool
    description: str


def lazy(target: str) -> Callable[..., Any]:
    """The function ``module:name``, imported on its first call: what a definition gives for
    its loaders and scorers, so that importing the definition stays cheap."""
    module, _, name = target.partition(":")

    @cache
    def resolve() -> Callable[..., Any]:
        found: Callable[..., Any] = getattr(import_module(module), name)
        return found

    def call(*args: Any, **kwargs: Any) -> Any:
        return resolve()(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{target}, imported on first use."
    return call


@dataclass(frozen=True, slots=True)
class Task:
    """One task of a benchmark.

    Attributes:
        name: The task key used in reports (``next_action``).
        label: Short display name (``NAP``), the default group of its metrics.
        title: Human-readable title.
        test_count: Number of test items in the published test set, when known.
    """

    name: str
    label: str
    title: str
    test_count: int | None = None


@dataclass(frozen=True)
class Benchmark:
    """Everything the evaluator, server and command line know about one benchmark.

    Loaders and scorers are given as callables and imported on first use, so that listing the
    hosted benchmarks stays cheap.

    Attributes:
        slug: URL and command-line key (``medvidbench``), lowercase letters, digits and hyphens.
        title: Display name.
        version: The benchmark (test set) version this definition describes.
        scorer_version: Bumped whenever any rule of any profile changes what a score is.
        tasks: The tasks, in display order.
        metrics: The board's metrics, in column order.
        profiles: The scoring profiles; the first is the default.
        labels: ``hidden`` (test labels are secret: the server never shows per-item truth)
            or ``public`` (anyone can score themselves; boards say so).
        load_ground_truth: ``(path or bytes, max_bytes) -> test set``; raises
            :class:`~medvidbench.core.errors.InvalidGroundTruthError` listing every problem.
        validate_submission: ``(path or bytes, test set, max_bytes, name) -> MatchedSubmission``;
            never raises on the file's content.
        load_questions: ``(path or bytes, max_bytes) -> test set`` from the public questions
            file (no answers): it validates a submission, never scores one; None when the
            benchmark has no such file.
        scorers: ``() -> {task: Scorer}`` for the rule-based tasks.
        judged_scorers: ``() -> {task: JudgedScorer}`` for tasks (or parts) an LLM judge scores.
        embedder: ``() -> Embedder``, the sentence embedder its scorers use, prepared (None: the
            package's default all-MiniLM-L6-v2 embedder, loaded when a scorer asks).
        rubric: What an LLM judge is asked for the judged tasks (its version is part of the
            judge's configuration id); None when nothing is judged.
        derived_metrics: ``(task metrics) -> more metrics``: metrics of no single task (an
            overall average), computed from the tasks' metrics after scoring.
        item_drawing: ``(item, SampleResult) -> {"width", "height", "truth", "predicted"}``:
            the boxes a public-label benchmark's item browser draws (None: no drawing).
        check_options: ``(scoring options, profile) -> problem or None``: whether a
            submission's declared options can be scored under a profile (the server refuses
            an upload the board's profile cannot score, instead of failing later).
        synthesise: ``(out_dir, samples, seed) -> {name: path}``: a synthetic demo test set
            with one prediction file per archetype (``ground_truth`` among the names).
        reported_results: ``() -> [{"model", "organisation", "metrics", ...}]``: published
            results shown as reported rows.
        identity: How a prediction finds its test item (for the docs and the About page).
        submission_format: One sentence on the prediction file, for the submit page.
        submission_example: A short example prediction file (JSON), shown on the submit page.
        about: The About page's text (plain paragraphs separated by blank lines).
        citation: BibTeX, or "".
        links: Display name to URL (paper, dataset, code).
        licence: The licence of the benchmark's data.
        primary_metric: The metric the board sorts by when average rank is not wanted.
        rewards: ``() -> RewardSpec``: its tasks as training rewards (:mod:`medvidbench.rewards`);
            None when the benchmark offers none.
        cluster_of: ``(item) -> cluster id``: the test items a bootstrap resamples together
            (MedVidBench: every question about one source video); None: each item alone.
        cluster_rule: One sentence naming that rule, stamped on every interval.
        derived_formulas: ``(metric formulas) -> more formulas``: the derived metrics as ratios
            of sums (:mod:`medvidbench.core.statistics`), so they get intervals too.
        importers: ``() -> {name: importer}``: converters of other toolkits' output files
            into submissions (``importer.to_submission(bytes, filename=, questions=)``,
            ``medvidbench import NAME``); None: none.
    """

    slug: str
    title: str
    version: str
    scorer_version: str
    tasks: tuple[Task, ...]
    metrics: tuple[Metric, ...]
    profiles: tuple[Profile, ...]
    load_ground_truth: Callable[..., Any]
    validate_submission: Callable[..., MatchedSubmission]
    scorers: Callable[[], Mapping[str, Scorer]]
    load_questions: Callable[..., Any] | None = None
    judged_scorers: Callable[[], Mapping[str, JudgedScorer]] = dict
    embedder: Callable[[], Embedder] | None = None
    rubric: Rubric | None = None
    derived_metrics: Callable[[dict[str, float | None]], dict[str, float | None]] | None = None
    item_drawing: Callable[[Any, Any], dict[str, Any] | None] | None = None
    check_options: Callable[[Mapping[str, Any], Profile], str | None] | None = None
    synthesise: Callable[[Path, int | None, int], dict[str, Path]] | None = None
    archetypes: tuple[str, ...] = ()
    reported_results: Callable[[], Sequence[Mapping[str, Any]]] = tuple
    labels: Labels = "hidden"
    identity: str = ""
    submission_format: str = "a JSON file of predictions."
    submission_example: str = ""
    about: str = ""
    citation: str = ""
    links: Mapping[str, str] = field(default_factory=dict)
    licence: str = ""
    primary_metric: str = ""
    rewards: Callable[[], RewardSpec] | None = None
    cluster_of: Callable[[Any], str] | None = None
    cluster_rule: str = "each test item on its own"
    derived_formulas: Callable[[dict[str, list[Ratio]]], dict[str, list[Ratio]]] | None = None
    importers: Callable[[], Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        tasks = {t.name for t in self.tasks}
        bad = [
            m.key
            for m in self.metrics
            if m.task not in tasks and not (m.task == "" and m.group)  # overall: no task
        ]
        if bad:
            raise ValueError(f"benchmark {self.slug!r}: metrics of unknown tasks: {bad}")
        if not self.profiles:
            raise ValueError(f"benchmark {self.slug!r} declares no profile")

    @cached_property
    def metric_keys(self) -> tuple[str, ...]:
        return tuple(m.key for m in self.metrics)

    @cached_property
    def metrics_by_key(self) -> dict[str, Metric]:
        return {m.key: m for m in self.metrics}

    @cached_property
    def tasks_by_name(self) -> dict[str, Task]:
        return {t.name: t for t in self.tasks}

    @property
    def default_profile(self) -> str:
        return self.profiles[0].name

    def group_of(self, metric: Metric) -> str:
        """The metric's column group: its own, else its task's label."""
        return metric.group or self.tasks_by_name[metric.task].label

    def profile(self, name: str | None = None) -> Profile:
        """Look a profile up by name (None: the default).

        Raises:
            UsageError: for an unknown name, listing the known ones.
        """
        for p in self.profiles:
            if p.name == (name or self.default_profile):
                return p
        known = ", ".join(p.name for p in self.profiles)
        raise UsageError(
            f"unknown profile {name!r} for benchmark {self.slug!r}; expected one of {known}"
        )
