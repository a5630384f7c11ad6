"""The command line's tables: a title, a bold header and rows, drawn with box characters.

::

    Per task
    ┏━━━━━━━━━━━━━┳━━━━━━━━━┓
    ┃ task        ┃ samples ┃
    ┡━━━━━━━━━━━━━╇━━━━━━━━━┩
    │ tal         │   1,637 │
    └─────────────┴─────────┘

Headers and cells are markup (:mod:`medvidbench.cli.consoles`). On a terminal narrower than a
table, the columns with most to spare are narrowed and their cells wrapped at spaces, down to
their longest word before any word is cut; in a pipe or a file a table keeps its natural width.
A stream that cannot write the box characters (not UTF-8) gets ``+``, ``-`` and ``|``, and
``?`` for what else it cannot write.
"""

from __future__ import annotations

from typing import Literal

from medvidbench.cli.consoles import Span, parse, render, width_of, wrap, writable

Justify = Literal["left", "right", "center"]

# top, header row, below the header, body row, bottom: left, fill, between, right
_BOX = ("┏━┳┓", "┃ ┃┃", "┡━╇┩", "│ ││", "└─┴┘")
_ASCII = ("+-++", "| ||", "+-++", "| ||", "+-++")
_NARROWEST = 4  # a column is not narrowed below this (or its header's width, if less)


class Table:
    """Columns and rows of markup, printed by :meth:`Console.print`.

    Example:
        >>> t = Table("metric", title="Scores")
        >>> t.add_column("value", justify="right")
        >>> t.add_row("CVS_acc", "0.939")
        >>> print("\\n".join(t.lines(None, styled=False)))
        Scores
        ┏━━━━━━━━━┳━━━━━━━┓
        ┃ metric  ┃ value ┃
        ┡━━━━━━━━━╇━━━━━━━┩
        │ CVS_acc │ 0.939 │
        └─────────┴───────┘
    """

    def __init__(self, *headers: str, title: str | None = None, title_justify: str = "") -> None:
        # title_justify is accepted for callers written for Rich: every title is on the left.
        self.title = title
        self.headers: list[str] = []
        self.justify: list[Justify] = []
        self.rows: list[list[str]] = []
        for header in headers:
            self.add_column(header)

    def add_column(self, header: str, justify: Justify = "left") -> None:
        self.headers.append(header)
        self.justify.append(justify)

    def add_row(self, *cells: str) -> None:
        if len(cells) != len(self.headers):
            raise ValueError(f"a row of {len(cells)} cells in a table of {len(self.headers)}")
        self.rows.append(list(cells))

    def lines(self, width: int | None, styled: bool, encoding: str | None = None) -> list[str]:
        """The table's lines, fitted to ``width`` columns when it is given; for a stream of
        another ``encoding`` than UTF-8, with ASCII boxes and what it cannot write as ``?``."""
        box = _ASCII if encoding is not None else _BOX
        head = [
            [(t, "1;" + c if c else "1") for t, c in writable(parse(h), encoding)]
            for h in self.headers
        ]
        body = [[writable(parse(cell), encoding) for cell in row] for row in self.rows]
        columns = list(zip(head, *body, strict=True))
        widths = [max(_longest(cells) for cells in column) for column in columns]
        if width is not None:
            words = [max(_longest_word(cells) for cells in column) for column in columns]
            _narrow(widths, words, width)  # wrapped at spaces, no word cut, if that is enough
            _narrow(widths, [min(_NARROWEST, _longest(h)) or 1 for h in head], width)
        out = []
        if self.title is not None:
            title = [(t, "3;" + c if c else "3") for t, c in writable(parse(self.title), encoding)]
            out += [render(line, styled) for line in wrap(title, width)]
        out.append(_rule(box[0], widths))
        out += self._row(head, widths, box[1], styled)
        out.append(_rule(box[2], widths))
        for row in body:
            out += self._row(row, widths, box[3], styled)
        out.append(_rule(box[4], widths))
        return out

    def _row(self, cells: list[list[Span]], widths: list[int], box: str, styled: bool) -> list[str]:
        wrapped = [wrap(cell, w) for cell, w in zip(cells, widths, strict=True)]
        height = max((len(lines) for lines in wrapped), default=1)
        out = []
        for i in range(height):
            parts = []
            for lines, w, side in zip(wrapped, widths, self.justify, strict=True):
                line = lines[i] if i < len(lines) else []
                gap = w - width_of("".join(t for t, _ in line))
                left = {"left": 0, "right": gap, "center": gap // 2}[side]
                parts.append(" " * left + render(line, styled) + " " * (gap - left))
            out.append(box[0] + " " + f" {box[2]} ".join(parts) + " " + box[3])
        return out


def _longest(spans: list[Span]) -> int:
    return max(width_of(line) for line in "".join(t for t, _ in spans).split("\n"))


def _rule(box: str, widths: list[int]) -> str:
    return box[0] + box[2].join(box[1] * (w + 2) for w in widths) + box[3]


def _longest_word(spans: list[Span]) -> int:
    return max((width_of(w) for w in "".join(t for t, _ in spans).split()), default=1)


def _narrow(widths: list[int], floor: list[int], width: int) -> None:
    """Narrow the columns that have most to spare above their ``floor``, one column at a time,
    until the table fits ``width`` (or every column is down to its floor)."""
    over = sum(widths) + 3 * len(widths) + 1 - width
    while over > 0:
        i = max(range(len(widths)), key=lambda k: (widths[k] - floor[k], k))
        if widths[i] <= floor[i]:
            return
        widths[i] -= 1
        over -= 1
