"""Prediction tables another toolkit writes (VLMEvalKit's ``.xlsx``, ``.tsv`` or ``.json``:
the dataset's table with a ``prediction`` column), read without trusting them.

A table is read as a table of predictions, whatever it declares: an ``.xlsx`` sheet's declared
size is ignored (a 5 KB workbook can declare ``A1:XFD1048576``, which openpyxl pads every row
to), rows are read as they come and only as wide as the header, and a header of more than
:data:`MAX_COLUMNS` columns, more than ``max_rows`` rows (empty ones counted) or a workbook that
unpacks to more than :data:`XLSX_UNPACKED` bytes is refused by name. Reading ``.xlsx`` needs
openpyxl (the ``xlsx`` extra).
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from medvidbench.core.errors import InvalidSubmissionError, Problem, ProblemList, UsageError

__all__ = ["MAX_COLUMNS", "MAX_ROWS", "XLSX_UNPACKED", "read_table"]

# What a prediction table may hold: rows (a VLMEvalKit table has one per question; without the
# test file to count them, the training-scale set's 531,850 with room), columns, and the bytes
# a workbook unpacks to (a 6,245-question MedVidBench workbook unpacks to a few MB).
MAX_ROWS, MAX_COLUMNS = 1_000_000, 256
XLSX_UNPACKED = 256 << 20


def read_table(
    source: bytes, filename: str, max_rows: int = MAX_ROWS, required: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The rows of a prediction table (``.xlsx``, ``.tsv`` or a JSON list of row objects) as
    header -> value mappings; ``required``: the columns it must have.

    Raises:
        InvalidSubmissionError: unreadable, or more than ``max_rows`` rows (empty ones
            counted) or :data:`MAX_COLUMNS` header columns; a workbook that unpacks to more
            than :data:`XLSX_UNPACKED` bytes.
    """
    suffix = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if suffix == "xlsx" or source[:4] == b"PK\x03\x04":
        return _xlsx_rows(source, filename, max_rows, required)
    if suffix == "json" or source.lstrip()[:1] == b"[":
        data = _json_rows(source, filename)
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise _invalid(filename, "expected a JSON list of row objects")
        if len(data) > max_rows:
            raise _invalid(filename, f"more than {max_rows:,} rows: one row per question")
        return data
    try:
        text = source.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _invalid(filename, f"not valid UTF-8 text: {exc}") from None
    try:
        table = csv.reader(io.StringIO(text, newline=""), delimiter="\t")
        return _rows(table, filename, max_rows, _header_of(table, filename, required))
    except csv.Error as exc:
        raise _invalid(filename, f"not a readable TSV file: {exc}") from None


def _json_rows(source: bytes, filename: str) -> Any:
    """A JSON table; Python's json module writes a missing cell of a DataFrame as a bare
    ``NaN``, which strict JSON refuses, so such a file is read again with those constants as
    null."""
    try:
        return msgspec.json.decode(source)
    except msgspec.DecodeError as exc:
        strict = exc
    import json

    try:
        return json.loads(source, parse_constant=lambda _: None)
    except (ValueError, RecursionError):
        raise _invalid(filename, f"not JSON: {strict}") from None


def _header_of(rows: Iterable[Sequence[Any]], filename: str, required: Sequence[str]) -> list[str]:
    return _header(next(iter(rows), []), filename, required)


def _header(first: Sequence[Any], filename: str, required: Sequence[str]) -> list[str]:
    """The header row's names, up to its last named column."""
    names = [str(h) if h is not None else "" for h in first[: MAX_COLUMNS + 1]]
    while names and not names[-1]:
        names.pop()
    if len(names) > MAX_COLUMNS:
        raise _invalid(filename, f"more than {MAX_COLUMNS} columns: not a prediction table")
    if not all(r in names for r in required):
        wanted = " and ".join(repr(r) for r in required)
        raise _invalid(
            filename, f"expected the columns {wanted}, found {', '.join(names) or 'none'}"
        )
    return names


def _rows(
    rows: Iterable[Sequence[Any]], filename: str, max_rows: int, header: list[str]
) -> list[dict[str, Any]]:
    """Header -> value mappings of the table's non-empty rows (those after the header), read
    as they come: no more than ``max_rows`` rows (empty ones counted), only the header's
    columns kept."""
    width = len(header)
    out = []
    for n, row in enumerate(rows, start=1):
        if n > max_rows:
            raise _invalid(
                filename,
                f"more than {max_rows:,} rows: a prediction table has one row per question",
            )
        cells = row[:width]
        if any(c not in (None, "") for c in cells):
            out.append(dict(zip(header, cells, strict=False)))
    return out


def _check_unpacked(source: bytes, filename: str) -> None:
    """Refuse a workbook whose parts unpack to more than :data:`XLSX_UNPACKED` bytes, counted
    as they are inflated (a zip's own sizes can lie)."""
    try:
        with zipfile.ZipFile(io.BytesIO(source)) as archive:
            members = archive.infolist()
            if len(members) > 10_000:
                raise _invalid(filename, f"{len(members):,} parts: not a prediction workbook")
            total = 0
            for member in members:
                with archive.open(member) as part:
                    while chunk := part.read(1 << 20):
                        total += len(chunk)
                        if total > XLSX_UNPACKED:
                            raise _invalid(
                                filename,
                                f"the workbook unpacks to more than {XLSX_UNPACKED >> 20} MB "
                                "(a prediction table unpacks to a few MB)",
                            )
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, ValueError) as exc:
        raise _invalid(filename, f"not a readable .xlsx workbook: {exc}") from None


def _xlsx_rows(
    source: bytes, filename: str, max_rows: int, required: Sequence[str]
) -> list[dict[str, Any]]:
    """The first sheet's rows. The sheet's declared size is not believed (a 5 KB workbook can
    declare A1:XFD1048576, which openpyxl would pad every row to); rows are read as they come,
    only to the header's width, and no more than ``max_rows``."""
    try:
        from openpyxl import load_workbook
    except ImportError:
        raise UsageError(
            "reading .xlsx files needs openpyxl: pip install openpyxl (the xlsx extra) "
            "(or export the predictions as TSV: PRED_FORMAT=tsv in VLMEvalKit)"
        ) from None
    _check_unpacked(source, filename)
    try:
        book = load_workbook(io.BytesIO(source), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds for a damaged workbook
        raise _invalid(filename, f"not a readable .xlsx workbook: {exc}") from None
    try:
        sheet = book.worksheets[0]
        sheet.reset_dimensions()
        first = next(sheet.iter_rows(max_row=1, values_only=True), ())
        header = _header(first, filename, required)
        rows = sheet.iter_rows(min_row=2, max_col=len(header), values_only=True)
        return _rows(rows, filename, max_rows, header)
    except InvalidSubmissionError:
        raise
    except Exception as exc:  # a damaged sheet, found while reading it
        raise _invalid(filename, f"not a readable .xlsx workbook: {exc}") from None
    finally:
        book.close()


def _invalid(filename: str, message: str) -> InvalidSubmissionError:
    problems = ProblemList()
    problems.add(Problem("unreadable", message))
    return InvalidSubmissionError(problems, filename)
