"""MedSG-Bench submissions (medsg.md §9), in the two formats researchers already have.

(a) Predictions by key: ``[{"task", "index", "prediction"}]``, or ``{"predictions": [...],
    "parser": "strong"|"old", "coordinates": "pixel"|"0-1000"|"0-1", "model": ...}``. A
    prediction is the model's raw text, or a box of 4 numbers in pixels used as it is.
(b) The official script's own results file(s): item records ``{task, question, answer, ...}`` in
    test order per task, and counters records. Matched by position within each task, and checked
    against the test item's question (§9.2). Whatever the file claims as ``iou``,
    ``filter_answer`` or ``groundtruth`` is never used for scoring: the raw ``answer`` is parsed
    again against our ground truth (``groundtruth``, when present, must match it).

Every task a submission answers must be complete; a task left out is reported missing.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from medvidbench.benchmarks.medsg.archive import ZIP_MAGIC, ArchiveRefused, json_members
from medvidbench.benchmarks.medsg.scoring import parse_strong, scored_box
from medvidbench.benchmarks.medsg.testset import TASKS, Item, TestSet
from medvidbench.core.errors import Problem
from medvidbench.core.formats import DEFAULT_MAX_BYTES, read_bytes
from medvidbench.core.submission import (
    MatchedSubmission,
    TaskCoverage,
    ValidationReport,
    answer_too_long,
)

PARSERS = ("strong", "old")
COORDINATES = ("pixel", "0-1000", "0-1")
_TAGS = re.compile(
    r"<\|box_start\|>|<\|box_end\|>|<\|object_ref_start\|>|<\|object_ref_end\|>"
    r"|</?box>|</?ref>|<image>|<\|image\|>"
)
_NOT_LETTER = re.compile(r"[^a-z]")
_MISSING_SHOWN = 20


def _where(part: str) -> str:
    return f"{part}: " if part else ""


def _letters(text: str) -> str:
    """A question reduced for the relaxed check: tags removed, letters only, lower case."""
    return _NOT_LETTER.sub("", _TAGS.sub("", text).lower())


def _is_box(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 4
        and all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in value
        )
    )


def validate_submission(
    source: str | Path | bytes,
    gt: TestSet,
    max_bytes: int = DEFAULT_MAX_BYTES,
    name: str = "",
) -> MatchedSubmission:
    """Validate a MedSG-Bench submission and match it to the test items (never raises on the
    file's content: every problem is in ``report.errors``)."""
    name, data, parts = _read(source, max_bytes, name)
    report = ValidationReport(name, hashlib.sha256(data).hexdigest(), len(data))
    matched = MatchedSubmission(report, [None] * len(gt))
    if parts is None:
        parts = [("", data)]
        if data[:4] == ZIP_MAGIC:
            try:
                parts = json_members(data, max_bytes, name)
            except ArchiveRefused as exc:
                report.errors.add(Problem("bad-zip", str(exc)))
                return matched
    raw = _decode(parts, report)
    if raw is None:
        return matched
    if isinstance(raw, dict) and "predictions" in raw:
        _options(raw, matched)
        raw = raw["predictions"]
    if not isinstance(raw, list):
        report.errors.add(
            Problem("wrong-type", "expected a JSON list of records (or {'predictions': [...]})")
        )
        return matched
    report.records = len(raw)
    by_task = gt.by_task()
    if not _match(raw, by_task, matched):
        return matched
    _check_coverage(by_task, matched)
    if not report.matched and not report.errors:  # `[]`, `{"predictions": []}`, counters only
        report.errors.add(
            Problem(
                "no-predictions",
                f"{_where(name)}no predictions: the file answers no test item (expected "
                "{task, index, prediction} records or the official script's results records)",
            )
        )
    if not report.errors:
        _normalised_coordinates(gt, matched)
    return matched


# How many answers the coordinate check reads (evenly spaced), and the share of the boxes it
# finds that must lie in [0, 1] on pixel-sized ground truth for it to warn.
_CHECKED, _UNIT_SHARE, _AT_LEAST = 500, 0.9, 10


def _normalised_coordinates(gt: TestSet, matched: MatchedSubmission) -> None:
    """Warn when the answers' boxes are in 0-1 units on images of hundreds of pixels (a model
    answering in normalised coordinates, undeclared): as pixels they score 0 on every item,
    and the file is otherwise valid."""
    options = matched.options
    if options.get("coordinates", "pixel") != "pixel" or options.get("parser") == "old":
        return  # declared, or the old parser, which rescales 0-1 answers itself
    answered = [i for i, p in enumerate(matched.predictions) if p is not None]
    step = max(1, len(answered) // _CHECKED)
    boxes = unit = 0
    for i in answered[::step]:
        prediction = matched.predictions[i]
        box = scored_box(parse_strong(prediction)) if isinstance(prediction, str) else prediction
        if not box or not any(box) or max(gt.samples[i].answer) <= 2:
            continue  # no box read (the fallback zeros), or ground truth not in pixels
        boxes += 1
        unit += all(0.0 <= v <= 1.0 for v in box)
    if boxes >= _AT_LEAST and unit >= _UNIT_SHARE * boxes:
        biggest = max(max(s.answer) for s in gt.samples)
        matched.report.warnings.add(
            Problem(
                "normalised-coordinates",
                f"{unit:,} of {boxes:,} answer boxes checked lie inside [0, 1], while the test "
                f"set's boxes are in pixels (up to {biggest:,.0f}): the answers look like "
                "normalised 0-1 coordinates, and as pixels every one of them scores 0. If so, "
                'declare them: {"predictions": [...], "coordinates": "0-1"} in the file, or '
                "--option coordinates=0-1, under the corrected profile (the official rules "
                "never rescale an answer)",
                answered_by="coordinates",
            )
        )


def _read(
    source: str | Path | bytes, max_bytes: int, name: str
) -> tuple[str, bytes, list[tuple[str, bytes]] | None]:
    """The submission's name, its bytes (a folder's files one after another: for the hash and
    size only), and a folder's ``*.json`` files by name (None: one file, perhaps a zip)."""
    if not isinstance(source, bytes) and Path(source).is_dir():
        parts = [(p.name, read_bytes(p, max_bytes)) for p in sorted(Path(source).glob("*.json"))]
        return name or str(source), b"".join(data for _, data in parts), parts
    if not isinstance(source, bytes):
        return name or str(source), read_bytes(source, max_bytes), None
    return name, source, None


def _decode(parts: list[tuple[str, bytes]], report: ValidationReport) -> Any:
    """The records of the parts (several results files concatenated in name order), or None
    when a part is not what it should be (the problem is in ``report``)."""
    raw: Any = []
    for part, data in parts:
        try:
            decoded = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            report.errors.add(
                Problem("not-json", f"{_where(part)}the submission is not JSON: {exc}")
            )
            return None
        except RecursionError:
            report.errors.add(
                Problem(
                    "too-deep", f"{_where(part)}the submission nests arrays or objects too deeply"
                )
            )
            return None
        if len(parts) == 1:
            raw = decoded
        elif isinstance(decoded, list):
            raw.extend(decoded)
        else:
            report.errors.add(Problem("wrong-type", f"{part}: expected a JSON list of records"))
            return None
    if not parts:
        report.errors.add(Problem("no-records", "no *.json file in the submission"))
        return None
    return raw


def _match(raw: list[Any], by_task: dict[str, list[Item]], matched: MatchedSubmission) -> bool:
    """Match the records, in whichever of the two formats they are; False when they are in
    neither or mix the two (the problem is in the report)."""
    errors = matched.report.errors
    kinds = [_kind(r) for r in raw]
    if "?" in kinds:
        bad = kinds.index("?")
        errors.add(
            Problem(
                "unknown-record",
                f"record {bad}: expected {{task, index, prediction}} (predictions by key) or "
                "{task, question, answer} (the official script's results file)",
                bad,
            )
        )
        return False
    if "a" in kinds and "b" in kinds:
        errors.add(
            Problem("mixed-formats", "the file mixes predictions by key with results records")
        )
        return False
    if "a" in kinds:
        _by_key(raw, by_task, matched)
    else:
        _results_file(raw, by_task, matched)
    return True


def _check_coverage(by_task: dict[str, list[Item]], matched: MatchedSubmission) -> None:
    """Each task's coverage; a task answered in part is an error naming what is missing."""
    report, predictions = matched.report, matched.predictions
    for task, items in by_task.items():
        got = sum(predictions[i.index] is not None for i in items)
        report.coverage[task] = TaskCoverage(task, len(items), got)
        if 0 < got < len(items):
            missing = [i.k for i in items if predictions[i.index] is None]
            shown = ", ".join(map(str, missing[:_MISSING_SHOWN]))
            more = (
                f" and {len(missing) - _MISSING_SHOWN} more"
                if len(missing) > _MISSING_SHOWN
                else ""
            )
            report.errors.add(
                Problem(
                    "incomplete-task",
                    f"task {task!r} is incomplete: no prediction for index {shown}{more} "
                    f"(a task is scored only when every one of its {len(items)} items is answered)",
                )
            )
    report.matched = sum(p is not None for p in predictions)


def _kind(rec: object) -> str:
    """``a`` (a prediction by key), ``b`` (a results record), ``counters`` or ``?``."""
    if not isinstance(rec, dict):
        return "?"
    if "index" in rec and "prediction" in rec:
        return "a"
    if "question" in rec and "answer" in rec:
        return "b"
    if rec and all(isinstance(v, dict) and "TOTAL" in v for v in rec.values()):
        return "counters"
    return "?"


def _options(raw: dict[str, Any], matched: MatchedSubmission) -> None:
    errors = matched.report.errors
    for key, allowed in (("parser", PARSERS), ("coordinates", COORDINATES)):
        if key in raw:
            if raw[key] not in allowed:
                errors.add(
                    Problem(
                        "bad-option",
                        f"{key} must be one of {', '.join(allowed)}; got {raw[key]!r}",
                    )
                )
            else:
                matched.options[key] = raw[key]
    if isinstance(raw.get("model"), str):
        matched.options["model"] = raw["model"][:200]


def _by_key(raw: list[Any], by_task: dict[str, list[Item]], matched: MatchedSubmission) -> None:
    errors, predictions = matched.report.errors, matched.predictions
    for pos, rec in enumerate(raw):
        if _kind(rec) != "a":
            errors.add(Problem("unknown-record", f"record {pos}: not a prediction record", pos))
            continue
        task, index, pred = rec.get("task"), rec.get("index"), rec.get("prediction")
        where = f"record {pos}"
        if task not in TASKS:
            errors.add(Problem("unknown-task", f"{where}: unknown task {task!r}", pos))
            continue
        if task not in by_task:
            errors.add(
                Problem("task-not-in-test-set", f"{where}: the test set has no {task!r} items", pos)
            )
            continue
        n = len(by_task[task])
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
            errors.add(
                Problem(
                    "bad-index",
                    f"{where}: index must be an integer from 0 to {n - 1} for {task!r}; "
                    f"got {index!r}",
                    pos,
                )
            )
            continue
        if not (isinstance(pred, str) or _is_box(pred)):
            errors.add(
                Problem(
                    "bad-prediction",
                    f"{where}: prediction must be the model's text or a box of 4 numbers",
                    pos,
                )
            )
            continue
        if isinstance(pred, str) and (too_long := answer_too_long(pred, where, pos)):
            errors.add(too_long)
            continue
        item = by_task[task][index]
        if predictions[item.index] is not None:
            errors.add(Problem("duplicate", f"{where}: {task!r} index {index} is repeated", pos))
            continue
        predictions[item.index] = pred if isinstance(pred, str) else [float(v) for v in pred]


def _results_file(
    raw: list[Any], by_task: dict[str, list[Item]], matched: MatchedSubmission
) -> None:
    """The official script's results records, in test order per task, checked against the
    test items (their questions, and their ground truth where the file repeats it)."""
    report, predictions = matched.report, matched.predictions
    seen: dict[str, int] = {}
    totals: dict[str, int] = {}
    relaxed = 0
    answers: dict[str, list[str]] = {}
    file_ious: dict[int, float] = {}  # what the file claims, compared, never used
    for pos, rec in enumerate(raw):
        if "question" not in rec:  # a counters record
            for task, counters in rec.items():
                totals[task] = counters.get("TOTAL")
            continue
        task = rec.get("task")
        if task not in by_task:
            report.errors.add(
                Problem("unknown-task", f"record {pos}: the test set has no {task!r} items", pos)
            )
            continue
        k = seen.get(task, 0)
        seen[task] = k + 1
        if k >= len(by_task[task]):
            continue  # counted below: more records than items
        item = by_task[task][k]
        checked = _results_answer(rec, pos, item, k, report)
        if checked is None:
            continue
        answer, rewritten = checked
        relaxed += rewritten
        answers.setdefault(task, []).append(answer)
        predictions[item.index] = answer
        if isinstance(rec.get("iou"), int | float):
            file_ious[item.index] = float(rec["iou"])
    _check_counts(seen, totals, answers, by_task, report)
    if relaxed:
        report.notices.append(
            f"{relaxed} record(s) matched their test question only after removing tags and "
            "punctuation (an official model path that rewrites the question)"
        )
    matched.options.setdefault("format", "results")
    matched.options["file_ious"] = file_ious


def _results_answer(
    rec: dict[str, Any], pos: int, item: Item, k: int, report: ValidationReport
) -> tuple[str, bool] | None:
    """A results record's answer to ``item`` (the ``k``-th of its task), and whether its
    question matched only once tags and punctuation were removed; None when the record does
    not belong there (the problem is in ``report``)."""
    task, where = item.task, f"record {pos}"
    question, answer = rec.get("question"), rec.get("answer")
    if not isinstance(question, str) or not isinstance(answer, str):
        report.errors.add(
            Problem("wrong-type", f"{where}: question and answer must be strings", pos)
        )
        return None
    if (too_long := answer_too_long(answer, where, pos)) is not None:
        report.errors.add(too_long)
        return None
    rewritten = not question.startswith(item.question)
    if rewritten and _letters(item.question) not in _letters(question):
        report.errors.add(
            Problem(
                "question-mismatch",
                f"{where}: its question is not that of {task!r} item {k} "
                "(results records must be in test order)",
                pos,
            )
        )
        return None
    truth = rec.get("groundtruth")
    if truth is not None and (
        not _is_box(truth) or [float(v) for v in truth] != [float(v) for v in item.answer]
    ):
        report.errors.add(
            Problem(
                "groundtruth-mismatch",
                f"{where}: its groundtruth {truth!r} is not our ground truth for {task!r} "
                f"item {k}: the file was scored against another version of the test set",
                pos,
            )
        )
        return None
    return answer, rewritten


def _check_counts(
    seen: dict[str, int],
    totals: dict[str, int],
    answers: dict[str, list[str]],
    by_task: dict[str, list[Item]],
    report: ValidationReport,
) -> None:
    """Each task's record count against its items and its counters record; a task whose every
    answer is one character was cut by the official script's model path."""
    for task, count in seen.items():
        if count != len(by_task[task]):
            report.errors.add(
                Problem(
                    "count-mismatch",
                    f"task {task!r}: {count} results records, the test set has "
                    f"{len(by_task[task])} items",
                )
            )
        if task in totals and totals[task] != count:
            report.errors.add(
                Problem(
                    "counters-mismatch",
                    f"task {task!r}: the counters record says TOTAL {totals[task]!r}, the file "
                    f"has {count} records",
                )
            )
        texts = answers.get(task, [])
        if texts and all(len(t) <= 1 for t in texts):
            report.errors.add(
                Problem(
                    "truncated-answers",
                    f"task {task!r}: every answer is at most one character (the InternVL2 and "
                    "MiniCPM paths store only the first character); submit predictions by key "
                    "with the full model text instead",
                )
            )
