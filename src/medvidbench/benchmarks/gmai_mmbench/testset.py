"""The GMAI-MMBench test set: VLMEvalKit's dataset TSV, read as VLMEvalKit reads it.

The file is ``GMAI-MMBench_VAL.tsv`` (answers given: a ground truth) or the 11 TEST parts
concatenated (no ``answer`` column: a questions file), best without its ``image`` column
(images are never opened, and a base64 image is larger than a TSV field may be here). Columns,
names of more than one letter in any case (VLMEvalKit lower-cases them):

- ``index``: an integer, the question's identity (unique);
- ``question``;
- the options, one column per capital letter (``A``-``E``): a cell pandas reads as missing
  (empty, ``None``, ``NA``...) is no option, as in VLMEvalKit;
- ``answer``: the right letter (a ground truth needs it for every row);
- ``clinical VQA task``, ``department``, ``perceptual granularity``: VLMEvalKit's sub-boards
  (a missing value is the group ``None``);
- ``category`` (the right option's label) and ``modality``, when present.

Every other column (``image``, ``original task``...) is ignored. ``.xlsx`` and a JSON list of
row objects with the same columns are read too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medvidbench.benchmarks.gmai_mmbench.cells import cell_integer, cell_text
from medvidbench.core.answers.vlmevalkit import is_missing
from medvidbench.core.errors import (
    InvalidGroundTruthError,
    InvalidSubmissionError,
    Problem,
    ProblemList,
)
from medvidbench.core.formats import DEFAULT_MAX_BYTES, read_bytes
from medvidbench.core.tables import MAX_ROWS, read_table

TASK = "mcq"
MISSING_GROUP = "None"  # the group of a missing value: VLMEvalKit's sub-board column name
GROUP_COLUMNS = ("clinical vqa task", "department", "perceptual granularity")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True, slots=True)
class Question:
    """One question (the kernel's ``TestItem``: index, sample_id, task, dataset).

    Attributes:
        index: Its position in the test file.
        sample_id: Its VLMEvalKit ``index``, as text.
        task: Always ``mcq``.
        dataset: Its clinical VQA task (the per-dataset table is the task sub-board).
        key: Its VLMEvalKit ``index``: how predictions name it.
        question: The question text.
        options: Letter to text, as VLMEvalKit sees them (cells read as missing left out).
        answer: The right letter ("" in a questions file).
        category: The right option's label ("" when the file has none).
        clinical_task, department, granularity, modality: Its groups (``None``: missing).
    """

    index: int
    sample_id: str
    task: str
    dataset: str
    key: int
    question: str
    options: dict[str, str]
    answer: str
    category: str
    clinical_task: str
    department: str
    granularity: str
    modality: str


@dataclass(slots=True)
class QuestionSet:
    """A loaded test set: questions in file order, ``samples[i].index == i``; ``warnings``
    names the questions VLMEvalKit can never score right (their answer is no option)."""

    samples: list[Question]
    sha256: str
    warnings: ProblemList = field(default_factory=ProblemList)
    by_key: dict[int, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.samples)


def load_ground_truth(
    source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES
) -> QuestionSet:
    """Read a test set with answers (GMAI-MMBench_VAL.tsv).

    Raises:
        InvalidGroundTruthError: listing every problem, with its row.
    """
    return _load(source, max_bytes, answers=True)


def load_questions(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> QuestionSet:
    """Read a questions file (the TEST parts concatenated): validates submissions, scores none.

    Raises:
        InvalidGroundTruthError: listing every problem, with its row.
    """
    return _load(source, max_bytes, answers=False)


def _load(source: str | Path | bytes, max_bytes: int, answers: bool) -> QuestionSet:
    data = source if isinstance(source, bytes) else read_bytes(source, max_bytes)
    name = "" if isinstance(source, bytes) else Path(source).name
    problems = ProblemList()
    rows = _rows(data, name, problems)
    columns = _columns(rows, answers, problems)
    questions: list[Question] = []
    seen: dict[int, int] = {}
    for n, row in enumerate(rows):
        q = _question(n, row, columns, len(questions), answers, problems)
        if q is None:
            continue
        if q.key in seen:
            problems.add(Problem("duplicate-index", f"row {n + 2}: index {q.key} repeated", n))
            continue
        seen[q.key] = q.index
        questions.append(q)
    if not questions and not problems:
        problems.add(Problem("no-items", "the test set has no question"))
    if problems:
        raise InvalidGroundTruthError(problems, name)
    found = QuestionSet(questions, hashlib.sha256(data).hexdigest(), by_key=seen)
    _warn_unanswerable(found, answers)
    return found


def _rows(data: bytes, name: str, problems: ProblemList) -> list[dict[str, Any]]:
    """The table's rows, or none with the reason in ``problems``."""
    try:
        return read_table(data, name, MAX_ROWS)
    except InvalidSubmissionError as exc:
        for p in exc.problems.items:
            hint = " (drop the image column: images are never read)" if "field" in p.message else ""
            problems.add(Problem(p.code, f"the test set: {p.message}{hint}"))
        return []


def _columns(
    rows: list[dict[str, Any]], answers: bool, problems: ProblemList
) -> dict[str, str | None]:
    """Each column we read -> the file's name for it (None: absent); absent required ones are
    problems. Single letters are matched exactly, longer names in any case."""
    names = list(dict.fromkeys(k for row in rows[:1] for k in row))
    lower = {n.lower(): n for n in reversed(names) if len(n) > 1}
    wanted = ("index", "question", *(("answer",) if answers else ()), *GROUP_COLUMNS)
    read = ("index", "question", "answer", *GROUP_COLUMNS, "category", "modality")
    found: dict[str, str | None] = {c: lower.get(c) for c in read}
    missing = [c for c in wanted if found[c] is None]
    if rows and missing:
        listed = ", ".join(names) or "none"
        problems.add(
            Problem("missing-column", f"expected the columns {missing}; the file has {listed}")
        )
    return found


def _question(
    n: int,
    row: Mapping[str, Any],
    columns: Mapping[str, str | None],
    position: int,
    answers: bool,
    problems: ProblemList,
) -> Question | None:
    """Row ``n`` as a question (``position``: its index among the questions), or None with
    the reason in ``problems``."""
    if any(columns[c] is None for c in ("index", "question", *GROUP_COLUMNS)):
        return None  # reported once for the file
    cell = {c: (cell_text(row.get(name)) or "") if name else "" for c, name in columns.items()}
    key = cell_integer(row.get(str(columns["index"])))
    if key is None:
        problems.add(Problem("bad-index", f"row {n + 2}: index {cell['index']!r} is no integer", n))
        return None
    answer = cell.get("answer", "")
    if answers and (columns["answer"] is None or is_missing(answer)):
        if columns["answer"] is not None:
            problems.add(Problem("no-answer", f"row {n + 2} (index {key}): no answer", n, str(key)))
        return None
    texts = {k: cell_text(row[k]) or "" for k in LETTERS if k in row}
    options = {k: v for k, v in texts.items() if not is_missing(v)}
    clinical = _group(cell["clinical vqa task"])
    return Question(
        position,
        str(key),
        TASK,
        clinical,
        key,
        cell["question"],
        options,
        answer if answers else "",
        cell["category"],
        clinical,
        _group(cell["department"]),
        _group(cell["perceptual granularity"]),
        _group(cell["modality"]),
    )


def _warn_unanswerable(found: QuestionSet, answers: bool) -> None:
    """Questions VLMEvalKit scores wrong whatever the answer: their answer is no option (an
    option whose text pandas reads as missing, ``None`` say, is none)."""
    if not answers:
        return
    for q in found.samples:
        if q.answer not in q.options:
            found.warnings.add(
                Problem(
                    "answer-not-an-option",
                    f"question {q.key}: its answer {q.answer!r} is not one of its options "
                    f"{sorted(q.options)}; VLMEvalKit scores it wrong whatever the answer",
                    q.index,
                    q.sample_id,
                )
            )


def _group(cell: str) -> str:
    return MISSING_GROUP if is_missing(cell) else cell
