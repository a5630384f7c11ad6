"""Matching a MedFrameQA prediction file to the test set, by question id.

Two record shapes are read, in a JSON list (any order), an object of records or JSON Lines:

- the official inference's ``result.json`` records as it writes them, ``{"cot_reasoning",
  "answer", "question_id", "correct_answer"}``: the raw ``cot_reasoning`` is what is scored (read
  again here); the file's own ``answer`` and ``correct_answer`` are never used for scoring, and a
  record where either disagrees with this reading or this test set is counted in a warning;
- ``{"question_id" (or "id"), "prediction"}``: the model's raw answer.

Validation never raises on the file's content: every problem is in the report, with its record.
Every test question must be answered (a question the official inference left out, because the
model's output was empty or its request failed, makes the file incomplete).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medvidbench.benchmarks.medframeqa.parser import official_letter
from medvidbench.benchmarks.medframeqa.testset import TASK, Question, QuestionSet, question_key
from medvidbench.core.errors import Problem
from medvidbench.core.formats import DEFAULT_MAX_BYTES, decode, read_bytes, record_label
from medvidbench.core.submission import (
    MatchedSubmission,
    TaskCoverage,
    ValidationReport,
    answer_too_long,
)

OFFICIAL_TEXT, SIMPLE_TEXT = "cot_reasoning", "prediction"
_SHOWN = 5  # ids named in a message


@dataclass(slots=True)
class _Claims:
    """What official-format records claim that this reading or this test set does not say."""

    answer: list[str] = field(default_factory=list)  # "'q3': 'B' in the file, 'C' read"
    key: list[str] = field(default_factory=list)
    raw_response: list[str] = field(default_factory=list)
    official: int = 0  # records in the official format


def _record(i: int, rec: object, where: str) -> tuple[str, str] | Problem:
    """(question id, answer text) of one record, or its problem."""
    if not isinstance(rec, dict):
        return Problem("wrong-type", f"{where}: expected an object", i)
    if OFFICIAL_TEXT in rec and SIMPLE_TEXT in rec:
        message = f"{where}: has both {OFFICIAL_TEXT!r} and {SIMPLE_TEXT!r}; expected one"
        return Problem("ambiguous", message, i)
    text_field = OFFICIAL_TEXT if OFFICIAL_TEXT in rec else SIMPLE_TEXT
    names = ["question_id"] if text_field == OFFICIAL_TEXT else ["question_id", "id"]
    ids = [question_key(rec[n]) if n in rec else None for n in names]
    given = [k for k in ids if k is not None]
    if not given or len(set(given)) > 1:
        expected = " or ".join(repr(n) for n in names)
        message = f"{where}: expected one question id in {expected} (a string or whole number)"
        return Problem("missing-field", message, i)
    qid = given[0]
    if text_field not in rec:
        message = f"{where} (id {qid[:60]!r}): expected field {OFFICIAL_TEXT!r} or {SIMPLE_TEXT!r}"
        return Problem("missing-field", message, i, qid)
    text = rec[text_field]
    if not isinstance(text, str):
        got = "null" if text is None else type(text).__name__
        message = (
            f"{where} (id {qid[:60]!r}): expected field {text_field!r} to be a string, got {got}"
        )
        return Problem("wrong-type", message, i, qid)
    return qid, text


def _check_claims(rec: dict[str, Any], item: Question, text: str, claims: _Claims) -> None:
    """Note where an official-format record's own fields disagree with what is scored."""
    if OFFICIAL_TEXT not in rec:
        return
    claims.official += 1
    claimed = rec.get("answer")
    if isinstance(claimed, str) and claimed != (read := official_letter(text, item.options)):
        claims.answer.append(
            f"{item.sample_id[:60]!r}: {claimed[:20]!r} in the file, {read!r} read"
        )
    key = rec.get("correct_answer")
    if key is not None and key != item.answer:
        claims.key.append(f"{item.sample_id[:60]!r}: {str(key)[:20]!r}, key {item.answer!r}")
    if rec.get("raw_response", []) != []:
        claims.raw_response.append(repr(item.sample_id[:60]))


def _warn(report: ValidationReport, claims: _Claims) -> None:
    for code, found, says in (
        (
            "answer-disagrees",
            claims.answer,
            "carry an 'answer' that is not what the official parser reads in their "
            "'cot_reasoning'; the raw text is what is scored",
        ),
        (
            "key-disagrees",
            claims.key,
            "carry a 'correct_answer' that is not this test set's key (made with another "
            "version of the test set?); this test set's key is what is scored against",
        ),
        (
            "raw-response",
            claims.raw_response,
            "carry a 'raw_response': the official accuracy counts such a record wrong whatever "
            "it answers; here it is scored from its 'cot_reasoning' like any other",
        ),
    ):
        if found:
            shown = "; ".join(found[:_SHOWN])
            report.warnings.add(Problem(code, f"{len(found):,} records {says} (e.g. {shown})"))


def _incomplete(report: ValidationReport, gt: QuestionSet, predictions: list[Any]) -> None:
    """Say which questions are missing, and why an official results file may lack some."""
    missing = [q.sample_id for q in gt.samples if predictions[q.index] is None]
    shown = ", ".join(repr(m[:60]) for m in missing[:_SHOWN])
    report.errors.add(
        Problem(
            "incomplete-task",
            f"task {TASK!r}: {len(gt) - len(missing):,} of {len(gt):,} questions have a "
            f"prediction; {len(missing):,} missing (e.g. {shown}). Every test question counts. "
            "The official inference leaves a question out of its results file when the "
            "model's output was empty or its request failed: run those again, or add each as "
            '{"question_id": ..., "cot_reasoning": ""} to have it counted wrong.',
        )
    )


def validate_submission(
    source: str | Path | bytes,
    gt: QuestionSet,
    max_bytes: int = DEFAULT_MAX_BYTES,
    name: str = "",
) -> MatchedSubmission:
    """Validate a prediction file and match each answer to its question by id."""
    data = source if isinstance(source, bytes) else read_bytes(source, max_bytes)
    label = name or ("" if isinstance(source, bytes) else Path(source).name)
    report = ValidationReport(label, hashlib.sha256(data).hexdigest(), len(data))
    predictions: list[str | None] = [None] * len(gt)
    decoded = decode(data, dict, what="prediction file", single_record_field="question_id")
    for problem in decoded.problems.items:
        report.errors.add(problem)
    records = [] if decoded.problems else decoded.records
    report.layout, report.records = decoded.layout, len(records)
    where = {q.sample_id: q.index for q in gt.samples}
    claims = _Claims()
    for i, rec in enumerate(records):
        at = record_label(decoded, i)
        found = _record(i, rec, at)
        if isinstance(found, Problem):
            report.errors.add(found)
            continue
        qid, text = found
        if qid not in where:
            report.errors.add(Problem("no-such-item", f"{at}: no question {qid[:60]!r}", i))
        elif too_long := answer_too_long(text, f"{at} (id {qid[:60]!r})", i, qid):
            report.errors.add(too_long)
        elif predictions[where[qid]] is not None:
            report.errors.add(Problem("duplicate", f"{at}: {qid[:60]!r} answered twice", i, qid))
        else:
            predictions[where[qid]] = text
            report.matched += 1
            _check_claims(rec, gt.samples[where[qid]], text, claims)
    if claims.official:
        report.layout = "official-results"
    _warn(report, claims)
    answered = sum(p is not None for p in predictions)
    report.coverage[TASK] = TaskCoverage(TASK, len(gt), answered)
    if 0 < answered < len(gt) and not report.errors:
        _incomplete(report, gt, predictions)
    return MatchedSubmission(report, predictions)
