"""Matching an MCQA-Demo prediction file to the test set, by question id.

A file is a JSON list of ``{"id", "prediction"}`` records, or one object mapping each id to
its answer. Validation never raises on the file's content: every problem is in the report.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from medvidbench.benchmarks.mcqa_demo.testset import TASK, QuestionSet
from medvidbench.core.errors import Problem
from medvidbench.core.formats import DEFAULT_MAX_BYTES, read_bytes
from medvidbench.core.submission import (
    MatchedSubmission,
    TaskCoverage,
    ValidationReport,
    answer_too_long,
)


def _pairs(raw: Any, report: ValidationReport) -> list[tuple[int, Any, Any]]:
    """(record number, id, prediction) of each record, whichever layout the file has."""
    if isinstance(raw, dict):
        report.layout = "object"
        return [(i, k, v) for i, (k, v) in enumerate(raw.items())]
    if isinstance(raw, list):
        return [
            (i, r.get("id"), r.get("prediction")) if isinstance(r, dict) else (i, None, None)
            for i, r in enumerate(raw)
        ]
    report.errors.add(Problem("wrong-type", "expected a JSON list of records or an object"))
    return []


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
    where = {q.sample_id: q.index for q in gt.samples}
    try:
        raw = json.loads(data)
    except ValueError as exc:
        report.errors.add(Problem("not-json", f"the predictions are not JSON: {exc}"))
        raw = []
    for i, qid, text in _pairs(raw, report):
        report.records += 1
        shown = repr(qid)[:60]
        if not isinstance(qid, str) or qid not in where:
            report.errors.add(
                Problem("no-such-item", f"record {i}: no question with id {shown}", i)
            )
            continue
        if not isinstance(text, str):
            got = type(text).__name__
            report.errors.add(
                Problem(
                    "wrong-type",
                    f"record {i} (id {shown}): expected field 'prediction' "
                    f"to be a string, got {got}",
                    i,
                    qid,
                )
            )
            continue
        too_long = answer_too_long(text, f"record {i} (id {shown})", i, qid)
        if too_long is not None:
            report.errors.add(too_long)
            continue
        if predictions[where[qid]] is not None:
            report.errors.add(
                Problem("duplicate", f"record {i}: id {shown} answered twice", i, qid)
            )
            continue
        predictions[where[qid]] = text
        report.matched += 1
    answered = sum(p is not None for p in predictions)
    report.coverage[TASK] = TaskCoverage(TASK, len(gt), answered)
    return MatchedSubmission(report, predictions)
