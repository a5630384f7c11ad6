"""Submission validation and matching predictions to test samples by identity.

Upstream pairs the i-th prediction with the i-th test sample and only warns when the qa_types
disagree, so a reordered file is silently scored against the wrong answers (metrics.md §7 B2).
We match by ``(id, qa_type, k)``, where k counts earlier records with the same id and qa_type in
each file; an explicit ``index`` field wins; a ``question`` field (results.json format)
disambiguates several questions about the same clip. A shuffled file therefore scores exactly
like an ordered one, as long as each clip's same-type questions keep their relative order.

Where they may not (several test questions share id, qa_type and question text, so only order
tells them apart), a file in the test file's order or in a known pipeline's (:mod:`.layouts`:
MedGRPO-Code on 2 to 16 GPUs) answers each question it was asked; any other file's answers to
those questions are *order-only matches*, counted per task and warned about (refused by
:meth:`~medvidbench.core.submission.ValidationReport.refuse_order_only` under ``--strict``).

Every problem is collected, with its location, before anything is decided.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from medvidbench.benchmarks.medvidbench import answer_formats, layouts
from medvidbench.benchmarks.medvidbench.entries import Entry, Source, read_entries
from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth
from medvidbench.benchmarks.medvidbench.tasks.registry import TASKS
from medvidbench.core.errors import InvalidSubmissionError, Problem
from medvidbench.core.formats import DEFAULT_MAX_BYTES
from medvidbench.core.submission import (
    ORDER_ONLY,
    MatchedSubmission,
    TaskCoverage,
    ValidationReport,
)

_EXAMPLES = 5


def validate_submission(
    source: Source | Sequence[Source],
    gt: GroundTruth,
    max_bytes: int = DEFAULT_MAX_BYTES,
    name: str = "",
) -> MatchedSubmission:
    """Validate a prediction file against a test set and match it sample by sample.

    ``source`` may also be several files, or a folder of them, that together make one
    submission: the per-GPU files of one MedGRPO-Code run, say (:mod:`.layouts`).

    Never raises on the file's content: every problem is in ``result.report.errors``.
    """
    report, files = read_entries(source, gt, max_bytes, name)
    predictions: list[str | None] = [None] * len(gt)
    if files is None:
        return MatchedSubmission(report, predictions)
    report.layout = report.layout or "list"
    _Matcher(gt, report, predictions).run(files)
    if not gt.answers:
        _check_formats(gt, report, predictions)
    return MatchedSubmission(report, predictions)


def _check_formats(gt: GroundTruth, report: ValidationReport, texts: list[str | None]) -> None:
    """Against the questions file: which answers their task's scorer reads nothing from."""
    labels = [f"sample {s.index} (id {s.sample_id!r})" for s in gt.samples]
    counts, examples = answer_formats.check([s.task for s in gt.samples], texts, labels)
    report.readable = counts
    for task, shown in examples.items():
        answered = report.coverage[task].matched
        bad = answered - counts[task]
        expected = answer_formats.FORMATS.get(task)
        report.warnings.add(
            Problem(
                "unreadable-answer",
                f"task {task!r}: {bad:,} of {answered:,} answers are in no format its scorer "
                f"reads (they score 0 under leaderboard-v1)"
                + (f"; expected {expected}" if expected else "")
                + f"; e.g. {'; '.join(shown)}",
            )
        )


def load_submission(
    source: str | Path | bytes, gt: GroundTruth, max_bytes: int = DEFAULT_MAX_BYTES, name: str = ""
) -> MatchedSubmission:
    """Like :func:`validate_submission`, but raise when the file is invalid.

    Raises:
        InvalidSubmissionError: listing every problem found.
    """
    result = validate_submission(source, gt, max_bytes, name)
    if not result.report.ok:
        raise InvalidSubmissionError(result.report.errors, result.report.source)
    return result


class _Matcher:
    """Assigns entries to test samples and records coverage in the report."""

    def __init__(self, gt: GroundTruth, report: ValidationReport, out: list[str | None]) -> None:
        self.gt, self.report, self.out = gt, report, out
        self.taken: dict[int, int] = {}  # sample index -> record number that claimed it
        self.order_only: dict[str, int] = {}  # task -> predictions matched by order alone
        self.order_only_types: dict[str, list[str]] = {}
        # Records already refused (an unknown qa_type, say) leave the rest out of step with the
        # test file, so its order and the pipelines' are not looked for: the file is invalid,
        # and no order-only warning says that it is in neither order.
        self.order_checked = not report.errors

    def run(self, files: list[list[Entry]]) -> None:
        entries = [e for f in files for e in f]
        if self.order_checked and all(e.index is None for e in entries):
            order = self._layout(files)
            if order is not None:
                for e, target in zip(entries, order, strict=True):
                    self._claim(e, target)
                self._coverage()
                return
        # Explicit indices first, so that order-based matching never takes their samples.
        for e in entries:
            if e.index is not None:
                self._by_index(e)
        for e in entries:
            if e.index is None:
                self._by_identity(e)
        self._coverage()

    def _layout(self, files: list[list[Entry]]) -> list[int] | None:
        """The test questions the records answer, one for one, when the files are in the test
        file's order or a known pipeline's (:mod:`.layouts`); else None."""
        gt, samples = self.gt, self.gt.samples
        types: set[str | None] = {e.qa_type for f in files for e in f}
        if not types <= gt.qa_type_set:  # bare task names: resolve record by record
            types = {self._resolve(e.sid, e.qa_type) for f in files for e in f}
            if None in types:
                return None
        if types == gt.qa_type_set:
            indices: Sequence[int] = range(len(samples))
            qa_types: Sequence[str] = gt.qa_types
        else:
            indices = [s.index for s in samples if s.qa_type in types]
            qa_types = [samples[i].qa_type for i in indices]
        same = self._same

        def fits(entries: list[Entry], order: Iterable[int]) -> bool:
            return all(same(e, samples[i]) for e, i in zip(entries, order, strict=False))

        if len(files) == 1:
            found = layouts.find_merged(
                len(files[0]), lambda order: fits(files[0], order), indices, qa_types
            )
            if found is None:
                return None
            n, order = found
            if n > 1:
                self._say(layouts.describe(n))
            return order
        sizes = [len(f) for f in files]
        gpus = layouts.find_shards(
            sizes,
            lambda f, order: len(order) == sizes[f] and fits(files[f], order),
            indices,
            qa_types,
        )
        if gpus is None:
            return None
        self._say(f"{layouts.describe(len(files))} from its {len(files)} per-GPU files")
        shares = {g: layouts.gpu_share(indices, qa_types, len(files), g) for g in gpus}
        return [i for g in gpus for i in shares[g]]

    def _same(self, e: Entry, s: Any) -> bool:
        """Whether record ``e`` can be the answer to test question ``s``."""
        return (
            e.sid == s.sample_id
            and (e.qa_type == s.qa_type or self._resolve(e.sid, e.qa_type) == s.qa_type)
            and (e.question is None or e.question == s.question)
        )

    def _say(self, line: str) -> None:
        self.report.restored = line
        self.report.notices.append(line)

    def _claim(self, e: Entry, target: int) -> None:
        if target in self.taken:
            s = self.gt.samples[target]
            self.report.errors.add(
                Problem(
                    "duplicate",
                    f"{e.where}: a second prediction for sample {target} "
                    f"({s.sample_id!r}, {s.qa_type}), already given by record "
                    f"{self.taken[target]}",
                    e.pos,
                    e.sid,
                )
            )
            return
        self.taken[target] = e.pos
        self.out[target] = e.text

    def _by_index(self, e: Entry) -> None:
        assert e.index is not None
        if e.index >= len(self.gt):
            self.report.errors.add(
                Problem(
                    "bad-index",
                    f"{e.where}: index {e.index} is past the last sample ({len(self.gt) - 1})",
                    e.pos,
                    e.sid,
                )
            )
            return
        s = self.gt.samples[e.index]
        # An index-only record (no id, no qa_type) is taken at its word; whatever identity a
        # record does carry must agree with the sample at that index.
        sid, qa_type = e.sid or s.sample_id, e.qa_type or s.qa_type
        if s.sample_id != sid or self._resolve(sid, qa_type) != s.qa_type:
            self.report.errors.add(
                Problem(
                    "index-mismatch",
                    f"{e.where}: index {e.index} is sample {s.sample_id!r} "
                    f"({s.qa_type}), but the record says {e.sid!r} ({e.qa_type})",
                    e.pos,
                    e.sid,
                )
            )
            return
        self._claim(e, e.index)

    def _resolve(self, sid: str, qa_type: str) -> str | None:
        """The test set's qa_type for an upload's, accepting bare task names."""
        if (sid, qa_type) in self.gt.groups:
            return qa_type
        variants = self.gt.variants_by_task.get((sid, qa_type), []) if qa_type in TASKS else []
        return variants[0] if len(variants) == 1 else None

    def _by_identity(self, e: Entry) -> None:
        qa_type = self._resolve(e.sid, e.qa_type)
        members = self.gt.groups.get((e.sid, qa_type)) if qa_type else None
        if not members:
            self.report.errors.add(Problem("unmatched", self._unmatched_message(e), e.pos, e.sid))
            return
        free = [m for m in members if m not in self.taken]
        if not free:
            if len(members) == 1:
                self._claim(e, members[0])  # reports the duplicate
            else:
                self.report.errors.add(
                    Problem(
                        "duplicate",
                        f"{e.where}: more predictions for qa_type {qa_type!r} than the "
                        f"test set has samples with this id ({len(members)})",
                        e.pos,
                        e.sid,
                    )
                )
            return
        target = free[0]
        alike = len(members)  # the questions this record cannot tell apart
        if e.question is not None and len(members) > 1:
            same = [m for m in members if self.gt.samples[m].question == e.question]
            alike = len(same) or len(members)
            target = next((m for m in same if m not in self.taken), target)
        if alike > 1:
            task = self.gt.samples[target].task
            self.order_only[task] = self.order_only.get(task, 0) + 1
            seen = self.order_only_types.setdefault(task, [])
            if self.gt.samples[target].qa_type not in seen:
                seen.append(self.gt.samples[target].qa_type)
        self._claim(e, target)

    def _unmatched_message(self, e: Entry) -> str:
        variants = self.gt.variants_by_task.get((e.sid, e.qa_type), [])
        if e.qa_type in TASKS and len(variants) > 1:
            return (
                f"{e.where}: qa_type {e.qa_type!r} is ambiguous for this id; use one of "
                f"{', '.join(variants)}"
            )
        others = self.gt.qa_types_by_id.get(e.sid)
        if others:
            return (
                f"{e.where}: the test set has no {e.qa_type!r} question for this id "
                f"(it has {', '.join(others)})"
            )
        return f"{e.where}: id {e.sid!r} matches no sample of the test set"

    def _coverage(self) -> None:
        report, gt = self.report, self.gt
        report.matched = len(self.taken)
        counts = gt.task_counts()
        matched = dict.fromkeys(counts, 0)
        for target in self.taken:
            matched[gt.samples[target].task] += 1
        report.coverage = {t: TaskCoverage(t, counts[t], matched[t]) for t in counts}
        for t, cov in report.coverage.items():
            if cov.status == "incomplete":
                self._report_incomplete(t, cov)
        if not report.matched and report.records and not report.errors:
            report.errors.add(Problem("nothing-matched", "no record matches a test sample"))
        if report.records == 0 and not report.errors:
            report.errors.add(Problem("no-records", "the submission contains no records"))
        if not self.order_checked:
            return
        report.order_only = {t: self.order_only[t] for t in counts if t in self.order_only}
        for task, n in report.order_only.items():
            report.warnings.add(
                Problem(ORDER_ONLY, _order_only_message(task, n, self.order_only_types[task]))
            )

    def _report_incomplete(self, task: str, cov: TaskCoverage) -> None:
        missing = [s for s in self.gt.samples if s.task == task and s.index not in self.taken]
        examples = ", ".join(f"{s.index} ({s.sample_id!r})" for s in missing[:_EXAMPLES])
        self.report.errors.add(
            Problem(
                "incomplete-task",
                f"task {task!r}: {cov.matched:,} of {cov.expected:,} samples have a prediction; "
                f"{len(missing):,} missing, e.g. samples {examples}. Predict every sample of a "
                "task, or leave the task out entirely (a partial submission).",
            )
        )
        for s in missing:
            self.report.errors.add(
                Problem(
                    "missing-prediction",
                    f"task {task!r}: no prediction for sample {s.index} "
                    f"(id {s.sample_id!r}, qa_type {s.qa_type})",
                    None,
                    s.sample_id,
                )
            )


def _order_only_message(task: str, n: int, qa_types: list[str]) -> str:
    """The order-only warning of one task: how many, which task, what to add.

    Examples:
        >>> _order_only_message("cvs_assessment", 1, ["cvs_assessment"])[:77]
        "task 'cvs_assessment': 1 prediction was matched to its test question by order"
    """
    kinds = ", ".join(qa_types)
    return (
        f"task {task!r}: {n:,} prediction{'s were' if n != 1 else ' was'} matched to "
        f"{'their' if n != 1 else 'its'} test question by order alone (qa_type {kinds}): these "
        "clips have several questions of that qa_type, and nothing in the records (an 'index', "
        "or 'question' text that differs) says which answer is which. The file is in neither "
        "the test file's order nor a known pipeline's, so if it was reordered, these answers "
        "are scored against the wrong questions. Add an 'index' field to each record: its "
        "question's position in the test file, from 0."
    )
