"""Table cells as VLMEvalKit's pandas reads them: a cell's text and an ``index`` cell's integer.

The same rules serve the test set and the prediction files, whichever the table's format: a
``.tsv`` cell is text, an ``.xlsx`` cell may be a number or empty, a JSON row's value anything.
"""

from __future__ import annotations

from typing import Any


def cell_text(value: Any) -> str | None:
    """A cell as text: "" for an empty one, an integral number without ``.0`` (pandas reads
    such spreadsheet numbers as integers), other scalars as ``str()`` gives them; None for a
    list or an object (a JSON row's value that no table cell can hold).

    Examples:
        >>> cell_text(None), cell_text(3.0), cell_text(2.5), cell_text("B"), cell_text([1])
        ('', '3', '2.5', 'B', None)
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list | dict):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def cell_integer(value: Any) -> int | None:
    """An ``index`` cell as an integer: an int, an integral float, or (signed) ASCII digits;
    None for anything else.

    Examples:
        >>> cell_integer(7), cell_integer(7.0), cell_integer(" 12 "), cell_integer("1e3")
        (7, 7, 12, None)
        >>> cell_integer(True) is None
        True
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        digits = value.strip()
        body = digits[1:] if digits[:1] in ("+", "-") else digits
        return int(digits) if body.isascii() and body.isdigit() else None
    return None
