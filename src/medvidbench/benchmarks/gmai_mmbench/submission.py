"""Matching a GMAI-MMBench prediction file to the test set, by VLMEvalKit ``index``.

A file is VLMEvalKit's prediction (or result) table, or a JSON list of ``{"index",
"prediction"}`` (:mod:`.predictions`). Validation never raises on the file's content: every
problem is in the report, with its row.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from medvidbench.benchmarks.gmai_mmbench.predictions import Answer, read_answers, same_question
from medvidbench.benchmarks.gmai_mmbench.testset import TASK, QuestionSet
from medvidbench.core.errors import Problem
from medvidbench.core.formats import DEFAULT_MAX_BYTES, read_bytes
from medvidbench.core.submission import (
    MatchedSubmission,
    TaskCoverage,
    ValidationReport,
    answer_too_long,
)


def validate_submission(
    source: str | Path | bytes,
    gt: QuestionSet,
    max_bytes: int = DEFAULT_MAX_BYTES,
    name: str = "",
) -> MatchedSubmission:
    """Validate a prediction file and match each answer to its question by ``index``."""
    data = source if isinstance(source, bytes) else read_bytes(source, max_bytes)
    label = name or ("" if isinstance(source, bytes) else Path(source).name)
    report = ValidationReport(label, hashlib.sha256(data).hexdigest(), len(data))
    # one row per question, with room: a file of many more rows is no prediction file
    found = read_answers(data, label, 2 * len(gt) + 1_000)
    report.layout, report.records = found.layout, found.records
    for unread in found.problems:
        report.errors.add(unread)
    predictions: list[str | None] = [None] * len(gt)
    for answer in found.answers:
        problem = _refusal(answer, gt, predictions)
        if problem is not None:
            report.errors.add(problem)
            continue
        predictions[gt.by_key[answer.key]] = answer.text
        report.matched += 1
    answered = sum(p is not None for p in predictions)
    report.coverage[TASK] = TaskCoverage(TASK, len(gt), answered)
    return MatchedSubmission(report, predictions)


def _refusal(answer: Answer, gt: QuestionSet, predictions: list[str | None]) -> Problem | None:
    """Why ``answer`` cannot be kept (no such question, answered twice, too long, about
    another question), or None."""
    at = gt.by_key.get(answer.key)
    sid = str(answer.key)
    if at is None:
        message = f"{answer.where}: the test set has no question with this index"
        return Problem("no-such-item", message, answer.record, sid)
    if predictions[at] is not None:
        return Problem("duplicate", f"{answer.where}: index answered twice", answer.record, sid)
    too_long = answer_too_long(answer.text, answer.where, answer.record, sid)
    if too_long is not None:
        return too_long
    if answer.question is not None and not same_question(answer.question, gt.samples[at].question):
        return Problem(
            "index-mismatch",
            f"{answer.where}: its question {answer.question[:80]!r} is not the test set's "
            f"question {answer.key} ({gt.samples[at].question[:80]!r}): a file of another "
            "dataset?",
            answer.record,
            sid,
        )
    return None
