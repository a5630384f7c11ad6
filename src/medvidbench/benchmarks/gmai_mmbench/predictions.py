"""VLMEvalKit's prediction file, read without trusting it: each row's ``index`` and answer.

VLMEvalKit writes ``{model}_{dataset}.xlsx`` (``.tsv`` or ``.json`` under ``PRED_FORMAT``): the
dataset's columns but ``image``, plus ``prediction``, the model's raw text. Its evaluation
writes ``{model}_{dataset}_{judge}_result.xlsx``: the same rows (column names lower-cased) with
``hit`` and ``log``. Both are read here, and so is a plain JSON list of ``{"index",
"prediction"}``. Only ``index``, ``prediction`` and ``question`` (to check it) are read:
``answer``, ``hit`` and every other column are never believed.

Tables are read by :func:`medvidbench.core.tables.read_table`. VLMEvalKit's own JSON writer
puts ``NaN`` in every empty cell, which strict JSON refuses; such a file is decoded again
with ``NaN`` read as an empty cell.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from medvidbench.benchmarks.gmai_mmbench.cells import cell_integer, cell_text
from medvidbench.core.answers.vlmevalkit import is_missing
from medvidbench.core.errors import InvalidSubmissionError, Problem, ProblemList
from medvidbench.core.tables import read_table

REQUIRED = ("index", "prediction")


@dataclass(frozen=True, slots=True)
class Answer:
    """One row's answer: where it is, the question it names, its text (a cell's text as
    pandas would give it to ``str()``) and the row's question, when it has one."""

    record: int  # the row's position among the file's rows, from 0
    where: str  # "row 7 (index 12)": a spreadsheet's numbering (header: row 1), or "record 6"
    key: int
    text: str
    question: str | None


@dataclass(slots=True)
class Answers:
    """A file's answers, every problem found on the way, its row count and its layout."""

    answers: list[Answer] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    records: int = 0
    layout: str = ""


def read_answers(data: bytes, filename: str, max_rows: int) -> Answers:
    """The answers of a prediction file (``.xlsx``, ``.tsv`` or a JSON list of rows); never
    raises on its content: what is wrong is in ``problems``."""
    layout = _layout(data, filename)
    found = Answers(layout=layout)
    try:
        rows = _rows(data, filename, max_rows, layout)
    except InvalidSubmissionError as exc:
        found.problems.extend(exc.problems.items)
        return found
    found.records = len(rows)
    for n, row in enumerate(rows):
        where = f"record {n}" if layout == "json" else f"row {n + 2}"
        answer = _answer(n, where, row, found.problems)
        if answer is not None:
            found.answers.append(answer)
    return found


def _answer(n: int, where: str, row: dict[str, Any], problems: list[Problem]) -> Answer | None:
    """Row ``n``'s answer, or None with the reason added to ``problems``."""
    key = cell_integer(row.get("index"))
    if key is None:
        shown = repr(row.get("index"))[:40]
        problems.append(
            Problem("bad-index", f"{where}: expected an integer 'index', got {shown}", n)
        )
        return None
    where = f"{where} (index {key})"
    if "prediction" not in row:
        problems.append(Problem("missing-field", f"{where}: no 'prediction'", n, str(key)))
        return None
    text = cell_text(row["prediction"])
    if text is None:
        kind = type(row["prediction"]).__name__
        problems.append(
            Problem(
                "wrong-type",
                f"{where}: expected field 'prediction' to be text, got {kind}",
                n,
                str(key),
            )
        )
        return None
    question = row.get("question")
    return Answer(n, where, key, text, question if isinstance(question, str) else None)


def _layout(data: bytes, filename: str) -> str:
    """The table's format, decided as :func:`~medvidbench.core.tables.read_table` decides it."""
    suffix = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if suffix == "xlsx" or data[:4] == b"PK\x03\x04":
        return "xlsx"
    if suffix == "json" or data.lstrip()[:1] == b"[":
        return "json"
    return "tsv"


def _rows(data: bytes, filename: str, max_rows: int, layout: str) -> list[dict[str, Any]]:
    """The table's rows; a JSON file refused as strict JSON is read again with ``NaN`` (and
    ``Infinity``) as empty cells, as VLMEvalKit writes them.

    Raises:
        InvalidSubmissionError: unreadable (the strict reader's reason), or too many rows.
    """
    try:
        return read_table(data, filename, max_rows, REQUIRED)
    except InvalidSubmissionError:
        if layout != "json":
            raise
        try:
            rows = json.loads(data, parse_constant=lambda _: None)
        except (ValueError, RecursionError):
            rows = None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise
    if len(rows) > max_rows:
        problems = ProblemList()
        problems.add(Problem("unreadable", f"more than {max_rows:,} rows: one row per question"))
        raise InvalidSubmissionError(problems, filename)
    return rows


def same_question(text: str, asked: str) -> bool:
    """Whether a row's question is the test set's question ``asked``, letters and digits
    compared (spacing, punctuation and a spreadsheet's escapes aside); a cell pandas reads as
    missing says nothing.

    Examples:
        >>> same_question("This is a CT image.  Which organ?", "This is a CT image. Which organ?")
        True
    """
    if is_missing(text) or is_missing(asked):
        return True
    return _letters(text) == _letters(asked)


def _letters(text: str) -> str:
    return "".join(c for c in text if c.isalnum())
