"""The MedVidQA test set, read from the official JSON file (``test.json`` of the release).

The file is one JSON list of questions, each an object with ``sample_id``, ``question``,
``answer_start`` / ``answer_end`` (``MM:SS`` strings), ``answer_start_second`` /
``answer_end_second`` (seconds), ``video_length`` (seconds), ``video_id`` (a YouTube id) and
the video's link (``video_url`` or ``video_link``).

What the official code reads, we read, and as it reads it: the two ``*_second`` fields
(numbers, or strings of numbers), ``video_length`` (a number) and ``video_id``; the ``MM:SS``
strings are not read. The truth is clipped to the video as the official loader clips it,
``start = max(0, start)`` and ``end = min(end, video_length)``, and never reordered: a span
that ends before it starts stays so (a warning says which). An empty object ``{}`` is skipped
with a warning, as the official loader skips it.

Where we are stricter (a leaderboard names each prediction's item): ``sample_id`` is required
and unique, since it is the identity rule (the official code ignores it and numbers the rows);
``video_length`` must be positive; times must be finite. Every problem is reported with its
record; nothing is guessed.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from medvidbench.core.errors import InvalidGroundTruthError, Problem, ProblemList
from medvidbench.core.formats import DEFAULT_MAX_BYTES, read_bytes

TASK = "mval"
DATASET = "medvidqa"


@dataclass(frozen=True, slots=True)
class Question:
    """One test question (the kernel's ``TestItem``: index, sample_id, task, dataset).

    ``start`` and ``end`` are the truth after the official clipping to ``[0, video_length]``.
    """

    index: int
    sample_id: str
    task: str
    dataset: str
    video_id: str
    question: str
    start: float
    end: float
    video_length: float
    video_url: str = ""


@dataclass(slots=True)
class QuestionSet:
    """A loaded test set: questions in file order, ``samples[i].index == i``."""

    samples: list[Question]
    sha256: str
    warnings: ProblemList = field(default_factory=ProblemList)

    def __len__(self) -> int:
        return len(self.samples)


def _number(value: Any, accept_text: bool) -> float | None:
    """A finite number from a JSON number (never a boolean) or, where the official loader
    calls ``float()`` on the field, a string of one; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif accept_text and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _identity(rec: dict[str, Any]) -> str | None:
    """The record's sample id as text (an integer or a non-empty string), else None."""
    sid = rec.get("sample_id")
    if isinstance(sid, int) and not isinstance(sid, bool):
        return str(sid)
    return sid if isinstance(sid, str) and sid.strip() else None


def _fields(rec: dict[str, Any], where: str, i: int) -> tuple[list[Problem], dict[str, Any]]:
    """The checked fields of one record, with one problem per bad field."""
    problems: list[Problem] = []
    sid = _identity(rec)
    if sid is None:
        problems.append(Problem("bad-id", f"{where}: expected 'sample_id' (integer or text)", i))
    for name in ("question", "video_id"):
        if not isinstance(rec.get(name), str):
            problems.append(Problem("missing-field", f"{where}: expected {name!r} text", i, sid))
    values: dict[str, Any] = {"sample_id": sid}
    for name, text_ok in (
        ("answer_start_second", True),
        ("answer_end_second", True),
        ("video_length", False),
    ):
        values[name] = _number(rec.get(name), text_ok)
        if values[name] is None:
            kind = "a finite number or a string of one" if text_ok else "a finite number"
            got = repr(rec.get(name))[:40]
            problems.append(
                Problem("bad-time", f"{where}: expected {name!r} to be {kind}, got {got}", i, sid)
            )
    if values["video_length"] is not None and values["video_length"] <= 0:
        problems.append(Problem("bad-time", f"{where}: 'video_length' must be positive", i, sid))
    return problems, values


def _question(i: int, rec: Any, problems: ProblemList, warnings: ProblemList) -> Question | None:
    where = f"record {i}"
    if not isinstance(rec, dict):
        got = type(rec).__name__
        problems.add(Problem("wrong-type", f"{where}: expected an object, got {got}", i))
        return None
    found, values = _fields(rec, where, i)
    for problem in found:
        problems.add(problem)
    if found:
        return None
    length = values["video_length"]
    # The official loader's clipping, in its order; the span is never reordered.
    start = max(0.0, values["answer_start_second"])
    end = min(values["answer_end_second"], length)
    if end <= start:
        shape = "ends before it starts" if end < start else "has no length"
        warnings.add(
            Problem(
                "degenerate-truth",
                f"{where}: the answer span [{start:g}, {end:g}] (clipped to the video) {shape}; "
                "kept as the official code keeps it",
                i,
                values["sample_id"],
            )
        )
    link = rec.get("video_url", rec.get("video_link", ""))
    return Question(
        i,
        values["sample_id"],
        TASK,
        DATASET,
        rec["video_id"],
        rec["question"],
        start,
        end,
        length,
        link if isinstance(link, str) else "",
    )


def _records(data: bytes) -> list[Any]:
    """The file's list of records.

    Raises:
        InvalidGroundTruthError: the file is not JSON, or not a list.
    """
    problems = ProblemList()
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as exc:
        problems.add(Problem("not-json", f"the test set is not JSON: {exc}"))
        raise InvalidGroundTruthError(problems) from None
    if not isinstance(raw, list):
        problems.add(Problem("wrong-type", "the test set must be a JSON list of questions"))
        raise InvalidGroundTruthError(problems)
    return raw


def load_ground_truth(
    source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES
) -> QuestionSet:
    """Load and validate a MedVidQA test file.

    Raises:
        InvalidGroundTruthError: listing every problem, with its record.
    """
    data = source if isinstance(source, bytes) else read_bytes(source, max_bytes)
    problems, warnings = ProblemList(), ProblemList()
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(_records(data)):
        if rec == {}:
            warnings.add(Problem("empty-record", f"record {i}: an empty object, skipped", i))
            continue
        q = _question(i, rec, problems, warnings)
        if q is None:
            continue
        if q.sample_id in seen:
            message = f"record {i}: sample_id {q.sample_id!r} repeats record {seen[q.sample_id]}"
            problems.add(Problem("duplicate-id", message, i, q.sample_id))
            continue
        seen[q.sample_id] = i
        questions.append(replace(q, index=len(questions)))
    if not questions and not problems:
        problems.add(Problem("no-items", "the test set has no question"))
    if problems:
        raise InvalidGroundTruthError(problems)
    return QuestionSet(questions, hashlib.sha256(data).hexdigest(), warnings)
