"""The consoles every command writes through: a small markup, colour on a terminal, plain when
asked.

Text is written with a markup of a few tags, ``[bold]``, ``[dim]``, ``[italic]``,
``[underline]`` and the colours ``red``, ``green``, ``yellow``, ``blue``, ``magenta`` and
``cyan`` (combined as ``[bold red]``), each closed by ``[/]``; ``[]`` is an empty tag (it
prints nothing). :func:`escape` makes any text print as it is, alone or beside other markup.
Brackets that are not such a tag print as they are. Control characters in the text (an escape
sequence inside a model name a server returned, say) and the bidirectional controls print as
``�``, and a tab as a space, so that nothing a command prints can move the cursor, retitle the
terminal or make a row read in another order than it was written.

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

import io
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
# C0 controls but newline, DEL and C1 controls (what could drive the terminal), and the
# bidirectional controls (what could make a row read in another order than it is written).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

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
    """``text`` as markup that prints it as it is (its brackets and backslashes included),
    alone or followed by more markup: a run of backslashes at its end is doubled and closed by
    the empty tag ``[]``, so that it cannot escape a tag after it.

    Examples:
        >>> escape("[bold] C:\\\\[x]")
        '\\\\[bold] C:\\\\\\\\\\\\[x]'
        >>> plain(escape("[bold] C:\\\\[x]")), plain("[bold]" + escape("dir\\\\") + "[/]")
        ('[bold] C:\\\\[x]', 'dir\\\\')
    """
    out = _TAG.sub(lambda m: m.group(1) * 2 + "\\" + m.group(0)[len(m.group(1)) :], text)
    trailing = len(out) - len(out.rstrip("\\"))
    return out + "\\" * trailing + "[]" if trailing else out


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
        run = _CONTROL.sub("\ufffd", "".join(text).replace("\t", " "))
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
        elif not closing and not words:
            pass  # the empty tag: ends a run of backslashes (see escape)
        else:
            text.append(tag)
    text.append(markup[at:])
    flush()
    return spans


def plain(markup: str) -> str:
    """The text a markup string prints, without its tags."""
    return "".join(t for t, _ in parse(markup))


def width_of(text: str) -> int:
    """Columns a string takes on a terminal (East Asian wide characters two; combining marks
    and format characters, such as a zero-width joiner, none)."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(
        0
        if unicodedata.combining(c) or unicodedata.category(c) == "Cf"  # a joiner, a soft hyphen
        else 2
        if unicodedata.east_asian_width(c) in "WF"
        else 1
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
        self._live: list[Status] = []  # the status lines shown, on one line, in opening order

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
        return terminal_columns(self.file) if self.is_terminal else None

    @property
    def encoding(self) -> str | None:
        """The stream's encoding when it is not UTF-8 (what it cannot write is written ``?``,
        and measured so); None for UTF-8."""
        encoding = getattr(self.file, "encoding", None) or "utf-8"
        unicode = encoding.lower().replace("-", "").replace("_", "").startswith("utf")
        return None if unicode else encoding

    def print(
        self, *objects: str | Table, soft_wrap: bool | None = None, highlight: bool = False
    ) -> None:
        """Write strings of markup (joined by spaces) and tables, each on lines of its own (no
        object: an empty line).

        ``highlight`` is accepted for callers written for Rich: nothing is highlighted.
        """
        from medvidbench.cli.tables import Table

        styled, width, encoding = self.styled, self.width, self.encoding
        wrap_at = None if (self.soft_wrap if soft_wrap is None else soft_wrap) else width
        lines: list[str] = [] if objects else [""]
        words: list[str] = []
        for obj in (*objects, None):
            if obj is not None and not isinstance(obj, Table):
                words.append(str(obj))
                continue
            if words:
                spans = writable(parse(" ".join(words)), encoding)
                lines += [render(line, styled) for line in wrap(spans, wrap_at)]
                words = []
            if obj is not None:
                lines += obj.lines(width, styled, encoding)
        self._write("".join(line + "\n" for line in lines))

    def _write(self, text: str) -> None:
        live = bool(self._live) and self.styled
        if live:  # a line printed while status lines show: above them, which are drawn again
            text = "\r\x1b[K" + text
        self.file.write(text)
        if live:
            self._redraw()
        self.file.flush()

    def _redraw(self) -> None:
        """The status lines, on one line, cut to the terminal's width."""
        now = time.monotonic()
        line = " · ".join(s.text(now) for s in self._live)
        width = (self.width or 80) - 1  # the last column would wrap on some terminals
        spans = writable(parse(line.replace("\n", " ")), self.encoding)
        whole = "".join(t for t, _ in spans)
        shown = _slice(spans, *next(_fit(whole, 0, len(whole), width)))  # its first line
        self.file.write("\r" + render(shown, True) + "\x1b[K")
        self.file.flush()

    @contextmanager
    def status(self, text: str) -> Iterator[Status]:
        """A line that says what is going on, rewritten in place on a terminal and removed at
        the end (beside any other open status line); nothing at all in plain output, in a pipe
        or in a file."""
        live = Status(self, text)
        try:
            yield live
        finally:
            live.close()


class Status:
    """A live line of :meth:`Console.status`: :meth:`update` rewrites it (at most ten times a
    second), with the seconds it has been up, and ``bar`` after them (cut first on a narrow
    terminal)."""

    def __init__(self, console: Console, text: str) -> None:
        self._console = console
        self._on = console.styled
        self._started = self._shown = time.monotonic()
        self._text, self._bar = text, ""
        if self._on:
            console._live.append(self)
        self.update(text, force=True)

    def text(self, now: float) -> str:
        shown = f"{self._text} ({now - self._started:.0f} s)"
        return f"{shown} {self._bar}" if self._bar else shown

    def update(self, text: str, *, bar: str = "", force: bool = False) -> None:
        self._text, self._bar = text, bar
        now = time.monotonic()
        if not self._on or (not force and now - self._shown < 0.1):
            return
        self._shown = now
        self._console._redraw()

    def close(self) -> None:
        if not self._on:
            return
        self._on = False
        console = self._console
        console._live.remove(self)
        if console._live:
            console._redraw()
        else:
            console.file.write("\r\x1b[K")
            console.file.flush()


def writable(spans: list[Span], encoding: str | None) -> list[Span]:
    """Spans as a stream of ``encoding`` writes them (what it cannot encode as ``?``), so that
    they are measured as they will show; unchanged for UTF-8 (``None``)."""
    if encoding is None:
        return spans
    return [(t.encode(encoding, "replace").decode(encoding), c) for t, c in spans]


def terminal_columns(stream: TextIO | None = None) -> int:
    """The terminal's width: ``COLUMNS`` when set, else what the terminal of ``stream`` says
    (then standard output, error and input: a command whose output goes to a file still
    draws its messages for the terminal), else 80 (as :func:`shutil.get_terminal_size` but
    for the stream written to; shutil would import three compressors on every command's
    path)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    for candidate in (stream, sys.__stdout__, sys.__stderr__, sys.__stdin__):
        try:
            size = os.get_terminal_size(candidate.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
            continue
        if size.columns > 0:
            return size.columns
    return 80


def console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A console for the command's output (``stderr``: for messages)."""
    return Console(stderr=stderr, soft_wrap=soft_wrap)
