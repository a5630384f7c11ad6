"""Submission validation and matching predictions to test samples by identity.

Upstream pairs the i-th prediction with the i-th test sample and only warns when the qa_types
disagree, so a reordered file is silently scored against the wrong answers (metrics.md §7 B2).
We match by ``(id, qa_type, k)``, where k counts earlier records with the same id and qa_type in
each file; an explicit ``index`` field wins; a ``question`` field (results.json format)
disambiguates several questions about the same clip. A shuffled file therefore scores exactly
like an ordered one.

Every problem is collected, with its location, before anything is decided.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth
from medvidbench.benchmarks.medvidbench.records import (
    IGNORED_UPLOAD_FIELDS,
    SubmissionRecord,
    sample_id,
    strip_video_tag,
)
from medvidbench.benchmarks.medvidbench.tasks.registry import TASKS, task_for_qa_type
from medvidbench.core.errors import InvalidSubmissionError, Problem, ProblemList
from medvidbench.core.formats import (
    DEFAULT_MAX_BYTES,
    check_fields,
    decode,
    read_bytes,
    record_label,
)
from medvidbench.core.submission import (
    MatchedSubmission,
    TaskCoverage,
    ValidationReport,
    answer_too_long,
)

_SUB_FILE = list[SubmissionRecord] | dict[str, SubmissionRecord]
_EXAMPLES = 5


class _Entry(msgspec.Struct, gc=False):
    """A submission record reduced to what matching needs."""

    pos: int
    where: str
    sid: str
    qa_type: str
    text: str
    index: int | None
    question: str | None


def validate_submission(
    source: str | Path | bytes,
    gt: GroundTruth,
    max_bytes: int = DEFAULT_MAX_BYTES,
    name: str = "",
) -> MatchedSubmission:
    """Validate a prediction file against a test set and match it sample by sample.

    Never raises on the file's content: every problem is in ``result.report.errors``.
    """
    if not isinstance(source, bytes):
        name = name or str(source)
        source = read_bytes(source, max_bytes)
    hint = "jsonl" if name.endswith(".jsonl") else "auto"
    decoded = decode(source, _SUB_FILE, hint, what="submission", single_record_field="qa_type")
    report = ValidationReport(
        name,
        decoded.sha256,
        decoded.size,
        decoded.layout,
        len(decoded.records),
        errors=decoded.problems,
    )
    report.notices = [
        f"field {f!r} is ignored: scores always use the server's own ground truth"
        for f in IGNORED_UPLOAD_FIELDS
        if f'"{f}"'.encode() in source
    ]
    predictions: list[str | None] = [None] * len(gt)
    if decoded.problems and not decoded.records:
        return MatchedSubmission(report, predictions)
    if _looks_like_ground_truth(decoded.records[:20], source):
        # One clear message, not one problem per record.
        report.errors.add(
            Problem(
                "ground-truth-file",
                "this looks like a ground-truth file (its records carry the reference answers "
                "in 'conversations'); submit your model's predictions",
            )
        )
        return MatchedSubmission(report, predictions)
    limit = len(gt) + max(1000, len(gt) // 10)
    if len(decoded.records) > limit:
        report.errors.add(
            Problem(
                "too-many-records",
                f"the submission has {len(decoded.records):,} records; the test set has "
                f"{len(gt):,} samples",
            )
        )
        return MatchedSubmission(report, predictions)
    entries = [
        e
        for i, rec in enumerate(decoded.records)
        if (e := _entry(i, rec, record_label(decoded, i), decoded.typed, report.errors))
    ]
    _Matcher(gt, report, predictions).run(entries)
    return MatchedSubmission(report, predictions)


def _looks_like_ground_truth(head: list[Any], source: bytes) -> bool:
    """Records that hold reference answers (``conversations``) and no prediction: someone
    uploaded the test set itself."""
    if not head or b'"conversations"' not in source[: 1 << 20]:
        return False

    def answerless(rec: Any) -> bool:
        if isinstance(rec, dict):
            return "conversations" in rec and not {"prediction", "answer", "response"} & rec.keys()
        return isinstance(rec, SubmissionRecord) and all(
            getattr(rec, f) is msgspec.UNSET for f in ("prediction", "answer", "response")
        )

    return all(answerless(rec) for rec in head)


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


def _entry(i: int, rec: Any, where: str, typed: bool, errors: ProblemList) -> _Entry | None:
    if rec is None:  # a JSONL line that was not JSON; already reported
        return None
    if not typed:
        if not isinstance(rec, dict):
            errors.add(
                Problem("wrong-type", f"{where}: expected an object, got {type(rec).__name__}", i)
            )
            return None
        found = _check_generic(rec, where, i)
        for p in found:
            errors.add(p)
        if found:
            return None
        try:
            rec = msgspec.convert(rec, SubmissionRecord)
        except msgspec.ValidationError as exc:
            errors.add(Problem("wrong-type", f"{where}: {exc}", i))
            return None
    return _semantic(i, rec, where, errors)


def _check_generic(rec: dict[str, Any], where: str, i: int) -> list[Problem]:
    sid = rec.get("id") if isinstance(rec.get("id"), str) else None
    label = f"{where} (id {sid!r})" if sid else where
    optional: dict[str, tuple[type, ...]] = {
        "id": (str,),
        "index": (int,),
        "question": (str,),
        "metadata": (dict,),
        "prediction": (str,),
        "answer": (str,),
        "response": (str,),
    }
    # A record that names its test-set position (``index``) needs no other identity.
    indexed = "index" in rec
    qa_type: dict[str, tuple[type, ...]] = {"qa_type": (str,)}
    required, optional = ({}, optional | qa_type) if indexed else (qa_type, optional)
    found = check_fields(rec, label, required, optional, i, sid)
    if not any(k in rec for k in ("prediction", "answer", "response")):
        found.append(
            Problem(
                "missing-field",
                f"{label}: missing field 'prediction' (or 'answer' in the results.json format)",
                i,
                sid,
            )
        )
    meta = rec.get("metadata")
    if "id" not in rec and not isinstance(meta, dict) and not indexed:
        found.append(
            Problem(
                "missing-field",
                f"{label}: missing field 'id' (or 'metadata' in the results.json format)",
                i,
                sid,
            )
        )
    if "id" not in rec and isinstance(meta, dict):
        fields = ("video_id", "fps", "input_video_start_frame", "input_video_end_frame")
        found += check_fields(
            meta, f"{label}, metadata", {k: (str, int, float) for k in fields}, record=i, sid=sid
        )
    return found


def _semantic(i: int, rec: SubmissionRecord, where: str, errors: ProblemList) -> _Entry | None:
    if isinstance(rec.id, str):
        sid = rec.id
    elif isinstance(rec.metadata, msgspec.Struct):
        m = rec.metadata
        sid = sample_id(m.video_id, m.input_video_start_frame, m.input_video_end_frame, m.fps)
    else:
        sid = ""
    label = f"{where} (id {sid!r})" if sid else where
    start = len(errors)
    text = next((t for t in (rec.prediction, rec.answer, rec.response) if isinstance(t, str)), None)
    if text is None:
        errors.add(
            Problem(
                "missing-field",
                f"{label}: missing field 'prediction' (or 'answer' in the results.json format)",
                i,
                sid or None,
            )
        )
    elif (too_long := answer_too_long(text, label, i, sid or None)) is not None:
        errors.add(too_long)
    index = rec.index if isinstance(rec.index, int) else None
    qa_type = rec.qa_type if isinstance(rec.qa_type, str) else ""
    if not sid and index is None:
        errors.add(
            Problem(
                "missing-field",
                f"{label}: missing field 'id' (or 'metadata' in the results.json format)",
                i,
            )
        )
    if not qa_type and index is None:
        errors.add(Problem("missing-field", f"{label}: missing field 'qa_type'", i, sid or None))
    elif qa_type and task_for_qa_type(qa_type) is None:
        errors.add(
            Problem(
                "unknown-qa-type",
                f"{label}: unknown qa_type {qa_type!r}; "
                f"expected one of {', '.join(TASKS)} (with a "
                "variant suffix such as _gpt where the test set "
                "has one)",
                i,
                sid or None,
            )
        )
    if index is not None and index < 0:
        errors.add(
            Problem(
                "bad-index",
                f"{label}: expected 'index' to be 0 or more, got {index}",
                i,
                sid or None,
            )
        )
    if len(errors) > start:
        return None
    question = strip_video_tag(rec.question) if isinstance(rec.question, str) else None
    assert isinstance(text, str)
    return _Entry(i, label, sid, qa_type, text, index, question)


class _Matcher:
    """Assigns entries to test samples and records coverage in the report."""

    def __init__(self, gt: GroundTruth, report: ValidationReport, out: list[str | None]) -> None:
        self.gt, self.report, self.out = gt, report, out
        self.taken: dict[int, int] = {}  # sample index -> record number that claimed it
        self.order_matched = 0

    def run(self, entries: list[_Entry]) -> None:
        # Explicit indices first, so that order-based matching never takes their samples.
        for e in entries:
            if e.index is not None:
                self._by_index(e)
        for e in entries:
            if e.index is None:
                self._by_identity(e)
        self._coverage()

    def _claim(self, e: _Entry, target: int) -> None:
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

    def _by_index(self, e: _Entry) -> None:
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

    def _by_identity(self, e: _Entry) -> None:
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
        if e.question is not None and len(members) > 1:
            same = [m for m in free if self.gt.samples[m].question == e.question]
            target = same[0] if same else target
        elif len(members) > 1:
            self.order_matched += 1
        self._claim(e, target)

    def _unmatched_message(self, e: _Entry) -> str:
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
        if self.order_matched:
            report.warnings.add(
                Problem(
                    "order-matched",
                    f"{self.order_matched} predictions answer clips that have several questions of "
                    "the same qa_type; they were matched by order of occurrence within each clip. "
                    "Add an 'index' (or 'question') field to each record to make this explicit.",
                )
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
