"""The consoles every command writes through: a small markup, colour on a terminal, plain when
asked.

Text is written with a markup of a few tags, ``[bold]``, ``[dim]``, ``[italic]``,
``[underline]`` and the colours ``red``, ``green``, ``yellow``, ``blue``, ``magenta`` and
``cyan`` (combined as ``[bold red]``), each closed by ``[/]``; :func:`escape` makes any text
print as it is. Brackets that are not such a tag print as they are, and control characters in
the text (an escape sequence inside a model name a server returned, say) print as ``�``, so
nothing a command prints can move the cursor or retitle the terminal.

Styled output (colour, bold) goes to a terminal, or anywhere with ``FORCE_COLOR`` set; plain
output, with ``--no-color`` or ``NO_COLOR`` set to any non-empty value (or ``TERM=dumb``), has
no escape sequence at all: no colour, no bold, no cursor movement (so no live status lines).
On a terminal, lines longer than its width are wrapped at spaces (unless a command asks for
whole lines); in a pipe or a file nothing is wrapped, so that ``grep`` finds a line whole.

This module and :mod:`medvidbench.cli.tables` are the command line's own writer: they replace
Rich, whose import and first table cost about 40 ms of every command (a sixth of a cold
``evaluate``) for the few tables and colours the commands print.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from medvidbench.cli.tables import Table

# Select Graphic Rendition codes of the markup's style words.
STYLES = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "underline": "4",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}
_TAG = re.compile(r"(\\*)\[(/?)([a-z ]*)\]")
# C0 controls but tab and newline, DEL and C1 controls: what could drive the terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

Span = tuple[str, str]  # text, and the SGR codes it is written with ("" for none)

_plain = False


def plain_output() -> bool:
    """Whether output must carry no escape sequence: ``--no-color``, ``NO_COLOR`` or a dumb
    terminal."""
    return _plain or os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb"


def use_plain_output() -> None:
    """From now on every console is plain (``--no-color``), those made before included (a
    console decides at each print)."""
    global _plain
    _plain = True


def escape(text: str) -> str:
    """``text`` as markup that prints it as it is (its brackets and backslashes included).

    Examples:
        >>> escape("[bold] C:\\\\[x]")
        '\\\\[bold] C:\\\\\\\\\\\\[x]'
        >>> plain(escape("[bold] C:\\\\[x]"))
        '[bold] C:\\\\[x]'
    """
    return _TAG.sub(lambda m: m.group(1) * 2 + "\\" + m.group(0)[len(m.group(1)) :], text)


def parse(markup: str) -> list[Span]:
    """The spans of a markup string: its text in runs of one style.

    Examples:
        >>> parse("a [bold red]b[/] [x] \\\\[dim]")
        [('a ', ''), ('b', '1;31'), (' [x] [dim]', '')]
    """
    spans: list[Span] = []
    stack: list[str] = []
    at = 0
    text: list[str] = []

    def flush() -> None:
        run = _CONTROL.sub("\ufffd", "".join(text))
        if run:
            codes = ";".join(stack)
            if spans and spans[-1][1] == codes:
                spans[-1] = (spans[-1][0] + run, codes)
            else:
                spans.append((run, codes))
            text.clear()

    for m in _TAG.finditer(markup):
        slashes, closing, words = m.groups()
        text.append(markup[at : m.start()] + "\\" * (len(slashes) // 2))
        at = m.end()
        tag = m.group(0)[len(slashes) :]
        names = words.split()
        if len(slashes) % 2:  # escaped: the bracket is text
            text.append(tag)
        elif closing and stack and (not names or all(n in STYLES for n in names)):
            flush()
            stack.pop()
        elif not closing and names and all(n in STYLES for n in names):
            flush()
            stack.append(";".join(STYLES[n] for n in names))
        else:
            text.append(tag)
    text.append(markup[at:])
    flush()
    return spans


def plain(markup: str) -> str:
    """The text a markup string prints, without its tags."""
    return "".join(t for t, _ in parse(markup))


def width_of(text: str) -> int:
    """Columns a string takes on a terminal (East Asian wide characters two, combining marks
    none)."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def wrap(spans: list[Span], width: int | None) -> list[list[Span]]:
    """Spans cut into lines: at each newline, and at spaces to fit ``width`` columns (a word
    longer than a line is cut where the line ends); ``None`` cuts at newlines only."""
    whole = "".join(t for t, _ in spans)
    cuts: list[tuple[int, int]] = []
    start = 0
    for paragraph in whole.split("\n"):
        end = start + len(paragraph)
        cuts.extend(_fit(whole, start, end, width))
        start = end + 1
    return [_slice(spans, a, b) for a, b in cuts]


def _fit(text: str, start: int, end: int, width: int | None) -> Iterator[tuple[int, int]]:
    """The ranges of ``text[start:end]`` (no newline in it) that fit ``width`` columns."""
    if width is None or width_of(text[start:end]) <= width:
        yield start, end
        return
    width = max(width, 1)
    while start < end:
        used, stop, space = 0, start, -1
        while stop < end:
            used += width_of(text[stop])
            if used > width:
                break
            if text[stop] == " ":
                space = stop
            stop += 1
        if stop == end:
            yield start, end
            return
        if text[stop] == " ":
            space = stop
        cut = space if space > start else max(stop, start + 1)
        yield start, cut
        start = cut
        while start < end and text[start] == " ":
            start += 1


def _slice(spans: list[Span], start: int, end: int) -> list[Span]:
    """The spans of the characters ``start:end`` of their joined text."""
    out: list[Span] = []
    at = 0
    for text, codes in spans:
        lo, hi = max(start - at, 0), min(end - at, len(text))
        if lo < hi:
            out.append((text[lo:hi], codes))
        at += len(text)
    return out


def render(spans: list[Span], styled: bool) -> str:
    """Spans as a string, with their SGR sequences when ``styled``."""
    if not styled:
        return "".join(t for t, _ in spans)
    return "".join(f"\x1b[{c}m{t}\x1b[0m" if c else t for t, c in spans)


class Console:
    """Writes markup and tables to ``file``, else to standard output or error (whichever is
    current when it writes: a test's captured streams too).

    ``soft_wrap``: never wrap a line, even on a terminal (a URL or a command to copy whole).
    """

    def __init__(
        self, *, stderr: bool = False, soft_wrap: bool = False, file: TextIO | None = None
    ) -> None:
        self.stderr = stderr
        self.soft_wrap = soft_wrap
        self._file = file

    @property
    def file(self) -> TextIO:
        if self._file is not None:
            return self._file
        return sys.stderr if self.stderr else sys.stdout

    @property
    def is_terminal(self) -> bool:
        """A terminal, or told to act as one (``FORCE_COLOR``)."""
        if os.environ.get("FORCE_COLOR", "") != "":
            return True
        isatty = getattr(self.file, "isatty", None)
        return bool(isatty and isatty())

    @property
    def styled(self) -> bool:
        return self.is_terminal and not plain_output()

    @property
    def width(self) -> int | None:
        """Columns to fit on a terminal; None (no limit) in a pipe or a file."""
        return terminal_columns() if self.is_terminal else None

    def print(
        self, *objects: str | Table, soft_wrap: bool | None = None, highlight: bool = False
    ) -> None:
        """Write strings of markup (joined by spaces) and tables, each on lines of its own.

        ``highlight`` is accepted for callers written for Rich: nothing is highlighted.
        """
        from medvidbench.cli.tables import Table

        styled, width = self.styled, self.width
        wrap_at = None if (self.soft_wrap if soft_wrap is None else soft_wrap) else width
        lines: list[str] = []
        words: list[str] = []
        for obj in (*objects, None):
            if obj is not None and not isinstance(obj, Table):
                words.append(str(obj))
                continue
            if words:
                lines += [render(line, styled) for line in wrap(parse(" ".join(words)), wrap_at)]
                words = []
            if obj is not None:
                lines += obj.lines(width, styled, ascii_only=not self._unicode)
        self._write("".join(line + "\n" for line in lines))

    @property
    def _unicode(self) -> bool:
        encoding = getattr(self.file, "encoding", None) or "utf-8"
        return encoding.lower().replace("-", "").replace("_", "").startswith("utf")

    def _write(self, text: str) -> None:
        stream = self.file
        if not self._unicode:  # what the stream cannot encode is written as "?"
            encoding = stream.encoding
            text = text.encode(encoding, "replace").decode(encoding)
        stream.write(text)
        stream.flush()

    @contextmanager
    def status(self, text: str) -> Iterator[Status]:
        """A line that says what is going on, rewritten in place on a terminal and removed at
        the end; nothing at all in plain output, in a pipe or in a file."""
        live = Status(self, text)
        try:
            yield live
        finally:
            live.close()


class Status:
    """The live line of :meth:`Console.status`: :meth:`update` rewrites it, at most ten times
    a second, with the seconds it has been up."""

    def __init__(self, console: Console, text: str) -> None:
        self._console = console
        self._on = console.styled
        self._started = self._shown = time.monotonic()
        self._text = ""
        self.update(text, force=True)

    def update(self, text: str, *, force: bool = False) -> None:
        self._text = text
        now = time.monotonic()
        if not self._on or (not force and now - self._shown < 0.1):
            return
        self._shown = now
        line = f"{text} ({now - self._started:.0f} s)"
        width = (self._console.width or 80) - 1  # the last column would wrap on some terminals
        spans = parse(line.replace("\n", " "))
        whole = "".join(t for t, _ in spans)
        shown = _slice(spans, *next(_fit(whole, 0, len(whole), width)))  # its first line
        self._console._write("\r" + render(shown, True) + "\x1b[K")

    def close(self) -> None:
        if self._on:
            self._console._write("\r\x1b[K")
            self._on = False


def terminal_columns() -> int:
    """The terminal's width: ``COLUMNS`` when set, else what standard output's terminal says,
    else 80 (as :func:`shutil.get_terminal_size`, whose module would import three compressors
    on every command's path)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A console for the command's output (``stderr``: for messages)."""
    return Console(stderr=stderr, soft_wrap=soft_wrap)
