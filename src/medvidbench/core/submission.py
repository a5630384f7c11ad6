"""A submission matched against a test set: the shapes every benchmark's matcher returns.

A benchmark's ``validate_submission`` decodes a prediction file, finds each prediction's test
item by the benchmark's identity rule and fills a :class:`ValidationReport`; the evaluator and
the server only read these shapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from medvidbench.core.errors import Problem, ProblemList

TaskStatus = Literal["complete", "missing", "incomplete"]

# Every parser is linear in its answer (core.linear_re), so a long answer costs time in
# proportion, never a stall; this bound is the second guard: a model's answer of more than
# ~8,000 tokens is a generation that ran away, and scoring it would only cost time.
MAX_ANSWER_CHARS = 32_768

# The warning code of predictions matched to a test question by their order alone.
ORDER_ONLY = "order-only"


def answer_too_long(
    text: str, where: str, record: int | None = None, sid: str | None = None
) -> Problem | None:
    """A problem when an answer is longer than :data:`MAX_ANSWER_CHARS`, else None.

    Examples:
        >>> answer_too_long("x" * 40_000, "record 3").message
        'record 3: the answer is 40,000 characters long, over the limit of 32,768; truncate it'
    """
    if len(text) <= MAX_ANSWER_CHARS:
        return None
    message = (
        f"{where}: the answer is {len(text):,} characters long, over the limit of "
        f"{MAX_ANSWER_CHARS:,}; truncate it"
    )
    return Problem("answer-too-long", message, record, sid)


@dataclass(slots=True)
class TaskCoverage:
    """How much of one task a submission answers."""

    task: str
    expected: int
    matched: int

    @property
    def status(self) -> TaskStatus:
        if self.matched == self.expected:
            return "complete"
        return "missing" if self.matched == 0 else "incomplete"


@dataclass(slots=True)
class ValidationReport:
    """Everything validation found out about a submission file.

    A report is ``ok`` when it has no errors. An ok report whose tasks are not all complete is
    a *partial* submission: accepted, with the missing tasks reported as missing (never zero).
    """

    source: str
    sha256: str
    size: int
    layout: str = "list"
    records: int = 0
    matched: int = 0
    errors: ProblemList = field(default_factory=ProblemList)
    warnings: ProblemList = field(default_factory=ProblemList)
    notices: list[str] = field(default_factory=list)
    coverage: dict[str, TaskCoverage] = field(default_factory=dict)
    # What the file declares about how to score it (a benchmark's own keys, such as
    # MedSG-Bench's ``parser``); the evaluator hands them to the scorers.
    options: dict[str, Any] = field(default_factory=dict)
    # Per task, the predictions matched to their test question by order alone: the file does
    # not say which of several indistinguishable questions each one answers.
    order_only: dict[str, int] = field(default_factory=dict)
    # The known pipeline layout whose order was restored, in one line ("" when none was).
    restored: str = ""
    # Per task, how many answers its scorer can read; filled only when checked against a
    # questions file (no answers to score against), else empty.
    readable: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def missing_tasks(self) -> list[str]:
        return [t for t, c in self.coverage.items() if c.status == "missing"]

    @property
    def complete(self) -> bool:
        return self.ok and all(c.status == "complete" for c in self.coverage.values())

    def settle(self, options: Mapping[str, Any]) -> None:
        """Drop the warnings that scoring ``options`` given by the user answer (a warning's
        ``answered_by`` option, given on the command line or by a caller)."""
        settled = {p.code for p in self.warnings.items if p.answered_by in options}
        if settled:
            self.warnings = self.warnings.without(settled)

    def refuse_order_only(self) -> None:
        """Make order-only matches errors (``--strict``, or a board that refuses them)."""
        kept = ProblemList(self.warnings.keep_per_code)
        for problem in self.warnings.items:
            if problem.code == ORDER_ONLY:
                self.errors.add(problem)
            else:
                kept.add(problem)
        moved = self.warnings.totals.get(ORDER_ONLY, 0)
        if moved:
            kept.totals = {c: n for c, n in self.warnings.totals.items() if c != ORDER_ONLY}
            kept.count = self.warnings.count - moved
            self.warnings = kept

    @property
    def verdict(self) -> str:
        """``valid``, ``partial`` or ``invalid``."""
        if not self.ok:
            return "invalid"
        return "valid" if self.complete else "partial"

    def summary(self) -> dict[str, Any]:
        """What an evaluation report says of its file: which file, how much of it matched, the
        verdict, and what validation said beside it (a restored layout, warnings such as
        order-only matches), so that a report read later still says it."""
        return {
            "sha256": self.sha256,
            "records": self.records,
            "matched": self.matched,
            "verdict": self.verdict,
            "restored": self.restored,
            "warnings": [p.to_dict() for p in self.warnings.items],
            "warning_totals": dict(self.warnings.totals),
        }

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-serialisable data (the CLI's ``--json`` and the API's shape)."""
        return {
            "verdict": self.verdict,
            "source": self.source,
            "sha256": self.sha256,
            "size_bytes": self.size,
            "layout": self.layout,
            "records": self.records,
            "matched": self.matched,
            "tasks": {
                t: {"expected": c.expected, "matched": c.matched, "status": c.status}
                for t, c in self.coverage.items()
            },
            "missing_tasks": self.missing_tasks,
            "errors": [p.to_dict() for p in self.errors.items],
            "error_totals": dict(self.errors.totals),
            "warnings": [p.to_dict() for p in self.warnings.items],
            "warning_totals": dict(self.warnings.totals),
            "notices": list(self.notices),
            "order_only": dict(self.order_only),
            "restored": self.restored,
            "readable": dict(self.readable),
        }


@dataclass(slots=True)
class MatchedSubmission:
    """A submission's predictions aligned with the ground truth.

    Attributes:
        report: What validation found.
        predictions: ``predictions[i]`` is the model's answer for ``gt.samples[i]`` (its text,
            or a benchmark-specific structure such as a box), or None.
    """

    report: ValidationReport
    predictions: list[Any]

    @property
    def options(self) -> dict[str, Any]:
        """What the file declares about how to score it (``report.options``)."""
        return self.report.options


def enforce_coverage(
    matched: MatchedSubmission,
    samples: Sequence[Any],
    tasks: Sequence[str],
    slug: str,
    caps: Mapping[str, int | None] | None = None,
) -> MatchedSubmission:
    """The kernel's rules for every benchmark's matched submission, whatever its plug-in did:
    coverage is counted here from the predictions (the plug-in's own counts are not trusted),
    a task answered in part is an error naming what is missing, a file that answers no item is
    refused, and an answer to an item of a task the benchmark does not declare is an error.
    A task left out entirely stays a *partial* submission (its metrics missing, never 0).
    An answer longer than its task's cap (``caps``: ``Task.answer_chars``) is cut to the cap,
    with a warning per task.

    Raises:
        ValueError: the plug-in returned predictions that do not line up with the test set
            (its bug, not the file's).
    """
    report = matched.report
    if len(matched.predictions) != len(samples):
        raise ValueError(
            f"benchmark {slug!r}: validate_submission returned {len(matched.predictions)} "
            f"predictions for a test set of {len(samples)} items"
        )
    declared = set(tasks)
    expected: dict[str, list[Any]] = {}
    answered: dict[str, int] = {}
    for item, prediction in zip(samples, matched.predictions, strict=True):
        expected.setdefault(item.task, []).append(item)
        if prediction is not None:
            answered[item.task] = answered.get(item.task, 0) + 1
    for task in sorted(set(expected) - declared):
        if answered.get(task):
            report.errors.add(
                Problem(
                    "undeclared-task",
                    f"{answered[task]:,} answers are to items of task {task!r}, which "
                    f"benchmark {slug!r} does not declare (its tasks: {', '.join(tasks)})",
                )
            )
    # Counted again whatever the matcher found, so that a file refused for other reasons
    # also names the items it leaves unanswered (every problem, not the first).
    report.coverage = {
        task: TaskCoverage(task, len(expected.get(task, ())), answered.get(task, 0))
        for task in tasks
        if task in expected
    }
    if not report.errors and not any(answered.values()):
        report.errors.add(Problem("no-predictions", "the file answers no item of the test set"))
    if caps and not report.errors:
        _cut_long_answers(matched, samples, caps)
    for task, cov in report.coverage.items():
        if cov.status == "incomplete" and not _reported(report, task):
            missing = [item for item in expected[task] if matched.predictions[item.index] is None]
            shown = ", ".join(repr(str(i.sample_id)) for i in missing[:5])
            report.errors.add(
                Problem(
                    "incomplete-task",
                    f"task {task!r}: {cov.matched:,} of {cov.expected:,} items have a "
                    f"prediction; {len(missing):,} missing (e.g. {shown}). Predict every "
                    "item of a task, or leave the task out entirely (a partial submission).",
                )
            )
    return matched


def _cut_long_answers(
    matched: MatchedSubmission, samples: Sequence[Any], caps: Mapping[str, int | None]
) -> None:
    cut: dict[str, list[int]] = {}
    for i, text in enumerate(matched.predictions):
        cap = caps.get(samples[i].task)
        if cap is not None and isinstance(text, str) and len(text) > cap:
            cut.setdefault(samples[i].task, []).append(len(text))
            matched.predictions[i] = text[:cap]
    for task, lengths in cut.items():
        matched.report.warnings.add(
            Problem(
                "answer-cut",
                f"task {task!r}: {len(lengths):,} answers are longer than the "
                f"{caps[task]:,} characters its answer format ever needs (up to "
                f"{max(lengths):,}); each was scored on its first {caps[task]:,} characters",
            )
        )


def _reported(report: ValidationReport, task: str) -> bool:
    """Whether the plug-in already said that ``task`` is incomplete."""
    return any(p.code == "incomplete-task" and repr(task) in p.message for p in report.errors.items)
