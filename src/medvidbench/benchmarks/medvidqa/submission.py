"""Matching a MedVidQA prediction file to the test set, by ``sample_id``.

A file is a JSON list (or JSON Lines, or an object of records) of records in either format,
which may be mixed:

- the MedVidQA challenge's: ``{"sample_id", "answer_start_second", "answer_end_second"}``, two
  JSON numbers in seconds, used as they are (never clipped, never reordered: the official IoU
  takes them so);
- text: ``{"sample_id", "prediction": "the model's answer"}``, read when scored
  (:mod:`.times`).

Rules (the official code reads no file, so each is ours, and each makes the file invalid with
the record named): an id that is no test question, an id answered twice, a record in neither
format or in both, a time that is not a finite JSON number (a string, ``true``, ``null``), an
answer over the global length limit. A question left out is the kernel's ``incomplete-task``:
every question counts. A reversed, empty or out-of-video span is scored as given, with a
warning. Validation never raises on the file's content.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from medvidbench.benchmarks.medvidqa.testset import TASK, QuestionSet
from medvidbench.core.errors import Problem
from medvidbench.core.formats import DEFAULT_MAX_BYTES, decode, read_bytes, record_label
from medvidbench.core.submission import (
    MatchedSubmission,
    TaskCoverage,
    ValidationReport,
    answer_too_long,
)

START, END, TEXT = "answer_start_second", "answer_end_second", "prediction"
_SHOWN = 5  # ids named in a warning


def _identity(value: Any) -> str | None:
    """A sample id as the test set holds it: an integer's digits, or the text itself."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) else None


def _seconds(rec: dict[str, Any], where: str, i: int, sid: str) -> tuple[Any, Problem | None]:
    """The record's ``[start, end]`` as floats, or the problem with it."""
    span: list[float] = []
    for name in (START, END):
        if name not in rec:
            return None, Problem("missing-field", f"{where}: missing field {name!r}", i, sid)
        value = rec[name]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value):
            got = "null" if value is None else repr(value)[:30]
            message = f"{where}: expected field {name!r} to be a finite number, got {got}"
            return None, Problem("wrong-type", message, i, sid)
        span.append(float(value))
    return span, None


def _prediction(rec: dict[str, Any], where: str, i: int, sid: str) -> tuple[Any, Problem | None]:
    """The record's answer (a span or a text), or the problem with it."""
    has_text, has_span = TEXT in rec, START in rec or END in rec
    if has_text and has_span:
        message = f"{where}: both a {TEXT!r} text and {START!r}/{END!r}: send one of the two"
        return None, Problem("ambiguous-record", message, i, sid)
    if not has_text:
        if not has_span:
            message = f"{where}: expected {START!r} and {END!r} (seconds) or {TEXT!r} (text)"
            return None, Problem("missing-field", message, i, sid)
        return _seconds(rec, where, i, sid)
    text = rec[TEXT]
    if not isinstance(text, str):
        got = "null" if text is None else type(text).__name__
        message = f"{where}: expected field {TEXT!r} to be a string, got {got}"
        return None, Problem("wrong-type", message, i, sid)
    return text, answer_too_long(text, where, i, sid)


def _warn_spans(gt: QuestionSet, matched: MatchedSubmission) -> None:
    """One warning per kind of odd span sent as numbers: scored as given, as the official
    IoU takes it, but most likely a mistake."""
    kinds: dict[str, list[str]] = {"reversed-span": [], "empty-span": [], "outside-video": []}
    for item, span in zip(gt.samples, matched.predictions, strict=True):
        if not isinstance(span, list):
            continue
        start, end = span
        if start > end:
            kinds["reversed-span"].append(item.sample_id)
        elif start == end:
            kinds["empty-span"].append(item.sample_id)
        if start < 0 or end > item.video_length or end < 0 or start > item.video_length:
            kinds["outside-video"].append(item.sample_id)
    what = {
        "reversed-span": "end before they start (scored as given: IoU 0 against a truth that "
        "does not)",
        "empty-span": "have no length (IoU 0)",
        "outside-video": "reach outside [0, video_length] (used as given, never clipped)",
    }
    for code, ids in kinds.items():
        if ids:
            shown = ", ".join(repr(s) for s in ids[:_SHOWN])
            message = f"{len(ids):,} predicted spans {what[code]}: e.g. {shown}"
            matched.report.warnings.add(Problem(code, message))


def validate_submission(
    source: str | Path | bytes,
    gt: QuestionSet,
    max_bytes: int = DEFAULT_MAX_BYTES,
    name: str = "",
) -> MatchedSubmission:
    """Validate a prediction file and match each prediction to its question by sample id."""
    data = source if isinstance(source, bytes) else read_bytes(source, max_bytes)
    label = name or ("" if isinstance(source, bytes) else Path(source).name)
    report = ValidationReport(label, hashlib.sha256(data).hexdigest(), len(data))
    matched = MatchedSubmission(report, [None] * len(gt))
    decoded = decode(data, dict[str, Any], what="prediction file", single_record_field="sample_id")
    report.layout, report.records = decoded.layout, len(decoded.records)
    for problem in decoded.problems.items:
        report.errors.add(problem)
    if decoded.problems:
        return matched
    where_of = {q.sample_id: q.index for q in gt.samples}
    for i, rec in enumerate(decoded.records):
        where = record_label(decoded, i)
        _match_one(i, rec, where, where_of, matched)
    answered = sum(p is not None for p in matched.predictions)
    report.coverage[TASK] = TaskCoverage(TASK, len(gt), answered)
    _warn_spans(gt, matched)
    return matched


def _match_one(
    i: int, rec: Any, where: str, where_of: dict[str, int], matched: MatchedSubmission
) -> None:
    """Match record ``i`` to its question, or report why it cannot be."""
    errors = matched.report.errors
    if not isinstance(rec, dict):
        got = "null" if rec is None else type(rec).__name__
        errors.add(Problem("wrong-type", f"{where}: expected an object, got {got}", i))
        return
    sid = _identity(rec.get("sample_id"))
    if sid is None or sid not in where_of:
        shown = repr(rec.get("sample_id"))[:60]
        errors.add(Problem("no-such-item", f"{where}: no test question with sample_id {shown}", i))
        return
    answer, problem = _prediction(rec, f"{where} (sample_id {sid!r})", i, sid)
    if problem is not None:
        errors.add(problem)
        return
    index = where_of[sid]
    if matched.predictions[index] is not None:
        errors.add(Problem("duplicate", f"{where}: sample_id {sid!r} answered twice", i, sid))
        return
    matched.predictions[index] = answer
    matched.report.matched += 1
