"""The MedFrameQA test set: multi-frame medical multiple-choice questions, one key letter each.

A file is the test split as a JSON list, an object of records, or JSON Lines (what
``datasets.Dataset.to_json`` writes), one record per question:

- ``question_id`` (a string, or a whole number kept as its decimal string): the identity;
- ``system``, ``organ``, ``keyword``, ``modality``, ``video_id``, ``question``: strings;
- ``options``: a list of 2-26 option texts, lettered A, B, ... by position;
- ``correct_answer`` and/or ``answer``: the key, one option letter. ``correct_answer`` is the
  field the official script reads, so it wins when both are there (a disagreement is a warning);
- ``image_1`` ... ``image_5``: the frames' paths (null past the last frame), or ``image_path``,
  the list the official script's own input carries. Paths are kept, never opened.

Other fields (``reasoning_chain``, ``image_url``...) are ignored. Every problem is reported with
its record and field; nothing is guessed.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medvidbench.core.errors import InvalidGroundTruthError, Problem, ProblemList
from medvidbench.core.formats import (
    DEFAULT_MAX_BYTES,
    check_fields,
    decode,
    read_bytes,
    record_label,
)

TASK = "frameqa"
LETTERS = string.ascii_uppercase  # the official script letters options A-Z by position
FRAME_FIELDS = tuple(f"image_{k}" for k in range(1, 6))
_TEXT_FIELDS = ("system", "organ", "keyword", "modality", "video_id", "question")


@dataclass(frozen=True, slots=True)
class Question:
    """One test question (the kernel's ``TestItem``: index, sample_id, task, dataset).

    ``dataset`` is the organ system, the grouping reports give beside the breakdowns.
    """

    index: int
    sample_id: str  # the question_id
    task: str
    dataset: str
    organ: str
    keyword: str
    modality: str
    video_id: str
    question: str
    options: tuple[str, ...]
    answer: str  # the key letter
    frames: tuple[str, ...]

    @property
    def letters(self) -> str:
        """The option letters, ``ABCD`` for four options."""
        return LETTERS[: len(self.options)]

    @property
    def system(self) -> str:
        return self.dataset


@dataclass(slots=True)
class QuestionSet:
    """A loaded test set: questions in file order, ``samples[i].index == i``."""

    samples: list[Question]
    sha256: str
    warnings: ProblemList = field(default_factory=ProblemList)

    def __len__(self) -> int:
        return len(self.samples)


def question_key(value: object) -> str | None:
    """A question id as the identity compares it: a string, or a whole number's decimal
    digits (JSON has both); None for anything else.

    Examples:
        >>> question_key("q1"), question_key(17), question_key(True), question_key(1.5)
        ('q1', '17', None, None)
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _frames(rec: dict[str, Any], where: str, i: int) -> tuple[tuple[str, ...], list[Problem]]:
    """The frame paths, in order, from image_1..image_5 or from image_path."""
    if not any(rec.get(k) is not None for k in FRAME_FIELDS) and "image_path" in rec:
        paths = rec["image_path"]
        if isinstance(paths, list) and paths and all(isinstance(p, str) for p in paths):
            return tuple(paths), []
        return (), [Problem("bad-frames", f"{where}: image_path must be a list of paths", i)]
    values = [rec.get(k) for k in FRAME_FIELDS]
    wrong = [k for k, v in zip(FRAME_FIELDS, values, strict=True) if not isinstance(v, str | None)]
    if wrong:
        message = f"{where}: {', '.join(wrong)} must be a path (a string) or null"
        return (), [Problem("bad-frames", message, i)]
    count = sum(v is not None for v in values)
    if count == 0 or any(v is None for v in values[:count]):
        message = f"{where}: expected frames image_1 ... image_N (1 <= N <= 5) without gaps"
        return (), [Problem("bad-frames", message, i)]
    return tuple(str(v) for v in values[:count]), []


def _key(rec: dict[str, Any], where: str, i: int, warnings: ProblemList) -> str | Problem:
    """The key letter: ``correct_answer`` (the official script's field), else ``answer``."""
    named = [k for k in ("correct_answer", "answer") if rec.get(k) is not None]
    if not named:
        return Problem("missing-field", f"{where}: missing field 'correct_answer' (or 'answer')", i)
    key = rec[named[0]]
    if not isinstance(key, str):
        return Problem("wrong-type", f"{where}: expected field {named[0]!r} to be a string", i)
    if len(named) == 2 and rec["answer"] != key:
        warnings.add(
            Problem(
                "key-disagrees",
                f"{where}: 'correct_answer' is {key[:20]!r} and 'answer' "
                f"{str(rec['answer'])[:20]!r}; the official script reads 'correct_answer', and "
                "so does this loader",
                i,
            )
        )
    return key


def _fields(rec: dict[str, Any], where: str, i: int) -> list[Problem]:
    """Every missing or mistyped field of a record (the key and frames are checked apart)."""
    found = check_fields(rec, where, {"options": (list,), **dict.fromkeys(_TEXT_FIELDS, (str,))})
    if question_key(rec.get("question_id")) is None:
        code = "wrong-type" if "question_id" in rec else "missing-field"
        message = f"{where}: expected field 'question_id' to be a string or a whole number"
        found.insert(0, Problem(code, message))
    return [Problem(p.code, p.message, i) for p in found]


def _question(i: int, rec: object, where: str, warnings: ProblemList) -> Question | list[Problem]:
    """One record as a question, or its problems."""
    if not isinstance(rec, dict):
        return [Problem("wrong-type", f"{where}: expected an object", i)]
    bad = _fields(rec, where, i)
    qid = question_key(rec.get("question_id"))
    if bad or qid is None:
        return bad
    options = rec["options"]
    if not 2 <= len(options) <= len(LETTERS) or not all(
        isinstance(o, str) and o.strip() for o in options
    ):
        return [Problem("bad-options", f"{where}: options must be 2-26 non-empty texts", i, qid)]
    key = _key(rec, where, i, warnings)
    if isinstance(key, Problem):
        return [key]
    if key not in LETTERS[: len(options)]:
        last = LETTERS[len(options) - 1]
        message = f"{where}: the key {key[:20]!r} is not one of the option letters A-{last}"
        return [Problem("bad-answer", message, i, qid)]
    frames, problems = _frames(rec, where, i)
    if problems:
        return problems
    text = {k: str(rec[k]) for k in _TEXT_FIELDS}
    return Question(
        i,
        qid,
        TASK,
        text["system"],
        text["organ"],
        text["keyword"],
        text["modality"],
        text["video_id"],
        text["question"],
        tuple(options),
        key,
        frames,
    )


def load_ground_truth(
    source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES
) -> QuestionSet:
    """Load and validate a MedFrameQA test set.

    Raises:
        InvalidGroundTruthError: listing every problem, with its record and field.
    """
    data = source if isinstance(source, bytes) else read_bytes(source, max_bytes)
    decoded = decode(data, dict, what="test set", single_record_field="question_id")
    problems, warnings = decoded.problems, ProblemList()
    questions: list[Question] = []
    seen: set[str] = set()
    for i, rec in enumerate(decoded.records if not problems else []):
        found = _question(i, rec, record_label(decoded, i), warnings)
        if isinstance(found, list):
            for problem in found:
                problems.add(problem)
        elif found.sample_id in seen:
            problems.add(
                Problem(
                    "duplicate-id",
                    f"{record_label(decoded, i)}: question_id {found.sample_id[:60]!r} repeated",
                    i,
                    found.sample_id,
                )
            )
        else:
            seen.add(found.sample_id)
            questions.append(found)  # any problem raises below, so index == position
    if not problems and not questions:
        problems.add(Problem("no-records", "the test set holds no question"))
    if problems:
        raise InvalidGroundTruthError(problems, "" if isinstance(source, bytes) else str(source))
    return QuestionSet(questions, hashlib.sha256(data).hexdigest(), warnings)
