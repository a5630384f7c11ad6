"""What a benchmark is: a small typed kernel and optional, typed capabilities.

The kernel (:class:`Benchmark`) says what every benchmark must: its slug, versions, tasks,
metrics, profiles (named variants of its named :class:`Rule` s), how its test set is read and a
prediction file matched (:class:`TestSetFormat`), and its scorers
(:class:`~medvidbench.core.scoring.TaskScorer`). Everything else is a capability a benchmark
may have: :class:`Presentation`, :class:`Uncertainty`, :class:`JudgedScoring`,
:class:`DemoData`, rewards and :class:`Importer` s.

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
from functools import cached_property
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    Protocol,
    runtime_checkable,
)

from medvidbench.core.capabilities import (
    DemoData as DemoData,  # re-exported: a definition imports everything from here
)
from medvidbench.core.capabilities import JudgedScoring as JudgedScoring
from medvidbench.core.capabilities import Presentation as Presentation
from medvidbench.core.capabilities import Uncertainty as Uncertainty
from medvidbench.core.errors import UsageError
from medvidbench.core.testsets import ItemT as ItemT  # re-exported: the kernel's names
from medvidbench.core.testsets import ItemT_co as ItemT_co
from medvidbench.core.testsets import MatchFile as MatchFile
from medvidbench.core.testsets import ReadTestSet as ReadTestSet
from medvidbench.core.testsets import SetT as SetT
from medvidbench.core.testsets import SetT_co as SetT_co
from medvidbench.core.testsets import SetT_contra as SetT_contra
from medvidbench.core.testsets import Source as Source
from medvidbench.core.testsets import TestItem as TestItem
from medvidbench.core.testsets import TestSet as TestSet
from medvidbench.core.testsets import TestSetFormat as TestSetFormat
from medvidbench.core.testsets import TestSetFunctions as TestSetFunctions

if TYPE_CHECKING:
    from pathlib import Path

    from medvidbench.core.embeddings import Embedder
    from medvidbench.core.rewards import RewardSpec
    from medvidbench.core.scoring import JudgedScorer, TaskScorer
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
class Rule:
    """One named rule of a benchmark's scoring and its named variants.

    A profile picks one variant of every rule its benchmark declares, by name (as
    lm-evaluation-harness names its answer filters ``strict-match`` and ``flexible-extract``):
    a task asks ``profile.variant("extraction")`` instead of branching on a yes/no flag.

    Attributes:
        name: The rule's name (``extraction``).
        variants: Its variants' names, the first the default (``published``, ``tolerant``).
        description: One sentence per variant, for the docs and the About page.

    Examples:
        >>> Rule("extraction", ("published", "tolerant")).default
        'published'
    """

    name: str
    variants: tuple[str, ...]
    description: str = ""

    @property
    def default(self) -> str:
        return self.variants[0]


@dataclass(frozen=True, slots=True)
class Profile:
    """A named, versioned set of parsing and scoring rules: one named variant per rule.

    Attributes:
        name: The profile's name (``leaderboard-v1``, ``strict-v2``).
        description: One sentence for reports and the About page.
        variants: ``(rule, variant)`` pairs; a rule the profile leaves out takes its default
            (the benchmark checks every name against its :attr:`Benchmark.rules`).

    Examples:
        >>> Profile("v2", "corrected", (("extraction", "tolerant"),)).variant("extraction")
        'tolerant'
    """

    name: str
    description: str
    variants: tuple[tuple[str, str], ...] = ()

    def variant(self, rule: str) -> str:
        """The variant this profile picks for ``rule``.

        Raises:
            KeyError: when the profile does not name the rule (a benchmark fills every
                declared rule in, so this is a scorer asking for a rule nobody declared).
        """
        for name, value in self.variants:
            if name == rule:
                return value
        raise KeyError(f"profile {self.name!r} names no variant of rule {rule!r}")

    def with_defaults(self, rules: Sequence[Rule]) -> Profile:
        """This profile with every declared rule it leaves out set to the rule's default."""
        named = dict(self.variants)
        full = tuple((r.name, named.get(r.name, r.default)) for r in rules)
        extra = tuple((k, v) for k, v in self.variants if k not in {r.name for r in rules})
        return Profile(self.name, self.description, full + extra)


@dataclass(frozen=True, slots=True)
class Task:
    """One task of a benchmark.

    Attributes:
        name: The task key used in reports (``next_action``).
        label: Short display name (``NAP``), the default group of its metrics.
        title: Human-readable title.
        test_count: Number of test items in the published test set, when known.
        answer_chars: The longest answer the task's format ever needs (None: only the global
            limit, 32,768). A longer answer is scored on its first ``answer_chars`` characters,
            with a warning: an answer of thousands of characters where the format is a short
            phrase is a generation that ran away, and reading all of it only costs time.
        family: The capability the task measures, in words shared across benchmarks (one of
            :data:`FAMILIES`, or a new one): the consensus board pools tasks of one family
            across benchmarks ("" : none).
    """

    name: str
    label: str
    title: str
    test_count: int | None = None
    answer_chars: int | None = None
    family: str = ""


# The task families several benchmarks share (the consensus board's capability pools).
FAMILIES = {
    "temporal-localisation": "finding when something happens in a video",
    "spatial-grounding": "finding where something is in an image or a video",
    "captioning": "describing what happens, in free text",
    "multiple-choice": "choosing the right option",
    "classification": "naming the class of what is seen, or what comes next",
    "assessment": "rating a performance on a published scale",
}


class Importer(Protocol):
    """Turns another harness's output file into this benchmark's submission records."""

    name: str  # e.g. "lmms-eval", "vlmevalkit"
    summary: str  # one line for --help

    def to_submission(
        self,
        source: bytes,
        *,
        filename: str,
        questions: Sequence[Mapping[str, Any]] | None,
    ) -> list[dict[str, Any]]: ...


@runtime_checkable
class TaskWriter(Importer, Protocol):
    """An importer that also writes the task its toolkit runs, whose output the importer then
    reads (``medvidbench export-task NAME DIR``)."""

    def task_files(
        self, questions: Sequence[Mapping[str, Any]] | None, folder: Path
    ) -> dict[str, bytes]: ...


@dataclass(frozen=True)
class Benchmark(Generic[ItemT]):
    """Everything the evaluator, server and command line know about one benchmark: a small
    typed kernel and optional, typed capabilities.

    Kernel (required):
        slug: URL and command-line key (``medvidbench``), lowercase letters, digits and hyphens.
        title: Display name.
        version: The benchmark (test set) version this definition describes.
        scorer_version: Bumped whenever any rule of any profile changes what a score is.
        tasks: The tasks, in display order.
        metrics: The board's metrics, in column order.
        profiles: The scoring profiles; the first is the default. Each names a variant of every
            rule in :attr:`rules` (left out: the rule's default).
        testset: The :class:`TestSetFormat`: reads the test set, matches prediction files.
        scorers: ``() -> {task: TaskScorer}`` for the rule-based tasks.

    Kernel (with defaults):
        rules: The named rules a profile picks variants of (``extraction``: ``published`` or
            ``tolerant``).
        labels: ``hidden`` (test labels are secret: the server never shows per-item truth)
            or ``public`` (anyone can score themselves; boards say so).
        embedder: ``() -> Embedder``, the sentence embedder its scorers use, prepared (None: the
            package's default all-MiniLM-L6-v2 embedder, loaded when a scorer asks).
        check_options: ``(scoring options, profile) -> problem or None``: whether a
            submission's declared options can be scored under a profile.
        option_names: The scoring options a user may set (``--option KEY=VALUE``, a
            rewarder's ``options``, ``evaluate(options=...)``); any other name is refused as a
            typo (:meth:`check_option_names`). A submission's own declarations are not.
        derived_metrics: ``(task metrics) -> more metrics``: metrics of no single task (an
            overall average), computed from the tasks' metrics after scoring.
        breakdowns: Named groupings of the test items beside ``dataset`` (MedFrameQA's organ
            system, organ and modality; GMAI-MMBench's department): ``{name: (item) -> group}``.
            Every report gives each metric per group of each (``Report.per_group``), from the
            same per-sample sums as the headline.

    Capabilities (optional):
        presentation: :class:`Presentation`: About text, identity rule, submission format and
            example, citation, links, licence, published results, the item drawing.
        uncertainty: :class:`Uncertainty`: bootstrap clusters and derived formulas.
        judging: :class:`JudgedScoring` (judged scorers and rubric), or None.
        demo: :class:`DemoData` (synthetic generator and archetypes), or None.
        rewards: ``() -> RewardSpec``: its tasks as training rewards, or None.
        importers: Other harnesses' output formats it reads, by :attr:`Importer.name`.
    """

    slug: str
    title: str
    version: str
    scorer_version: str
    tasks: tuple[Task, ...]
    metrics: tuple[Metric, ...]
    profiles: tuple[Profile, ...]
    testset: TestSetFormat[ItemT]
    scorers: Callable[[], Mapping[str, TaskScorer[ItemT]]]
    rules: tuple[Rule, ...] = ()
    labels: Labels = "hidden"
    embedder: Callable[[], Embedder] | None = None
    check_options: Callable[[Mapping[str, Any], Profile], str | None] | None = None
    option_names: tuple[str, ...] = ()
    derived_metrics: Callable[[dict[str, float | None]], dict[str, float | None]] | None = None
    breakdowns: Mapping[str, Callable[[ItemT], str]] = field(default_factory=dict)
    presentation: Presentation = field(default_factory=Presentation)
    uncertainty: Uncertainty[ItemT] = field(default_factory=Uncertainty)
    judging: JudgedScoring | None = None
    demo: DemoData | None = None
    rewards: Callable[[], RewardSpec[ItemT]] | None = None
    importers: Mapping[str, Importer] = field(default_factory=dict)

    def check_option_names(self, options: Mapping[str, Any]) -> None:
        """Refuse scoring options this benchmark does not take (a misspelt one would be
        ignored, and the answers scored as without it).

        Raises:
            UsageError: naming the unknown options and those the benchmark takes.
        """
        unknown = sorted(set(options) - set(self.option_names))
        if unknown:
            takes = ", ".join(self.option_names) if self.option_names else "none"
            raise UsageError(
                f"{self.slug} has no scoring option {', '.join(map(repr, unknown))} "
                f"(it takes: {takes})"
            )

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
        rules = {r.name: r for r in self.rules}
        for p in self.profiles:
            for rule, variant in p.variants:
                if rule not in rules or variant not in rules[rule].variants:
                    raise ValueError(
                        f"benchmark {self.slug!r}: profile {p.name!r} picks {variant!r} of "
                        f"rule {rule!r}, which the benchmark does not declare"
                    )
        # every profile names every rule: a task reads a variant, never a missing default
        object.__setattr__(
            self, "profiles", tuple(p.with_defaults(self.rules) for p in self.profiles)
        )
        wrong = [k for k, imp in self.importers.items() if imp.name != k]
        if wrong:
            raise ValueError(f"benchmark {self.slug!r}: importers under another name: {wrong}")

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

    def judged_scorers(self) -> Mapping[str, JudgedScorer[Any]]:
        """The judged scorers by task (none without the judged-scoring capability)."""
        return self.judging.scorers() if self.judging is not None else {}

    def load_ground_truth(
        self, source: str | Path | bytes, max_bytes: int | None = None
    ) -> TestSet[ItemT]:
        """:meth:`TestSetFormat.load_ground_truth` of this benchmark's :attr:`testset`."""
        return self.testset.load_ground_truth(source, max_bytes)

    def validate_submission(
        self,
        source: Source,
        test_set: TestSet[ItemT],
        max_bytes: int | None = None,
        name: str = "",
    ) -> MatchedSubmission:
        """:meth:`TestSetFormat.validate_submission` of this benchmark's :attr:`testset`, then
        the kernel's rules, the same for every benchmark
        (:func:`~medvidbench.core.submission.enforce_coverage`): no task answered in part, no
        file that answers nothing, no answer to an undeclared task."""
        from medvidbench.core.submission import enforce_coverage

        matched = self.testset.validate_submission(source, test_set, max_bytes, name)
        tasks = [t.name for t in self.tasks]
        caps = {t.name: t.answer_chars for t in self.tasks}
        return enforce_coverage(matched, test_set.samples, tasks, self.slug, caps)

    def load_questions(
        self, source: str | Path | bytes, max_bytes: int | None = None
    ) -> TestSet[ItemT]:
        """:meth:`TestSetFormat.load_questions` of this benchmark's :attr:`testset`."""
        return self.testset.load_questions(source, max_bytes)

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
