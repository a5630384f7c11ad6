"""The command line's own writer: markup, escaping, control characters, colour only where
asked, tables fitted to a terminal and whole in a pipe, ASCII boxes for a non-UTF-8 stream."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from medvidbench.cli import consoles
from medvidbench.cli.consoles import Console, escape, parse, plain, width_of
from medvidbench.cli.tables import Table

ESC = re.compile(r"\x1b\[[0-9;]*[mK]")


class _Stream(io.StringIO):
    def __init__(self, tty: bool, encoding: str = "utf-8") -> None:
        super().__init__()
        self._tty, self._encoding = tty, encoding

    def isatty(self) -> bool:
        return self._tty

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


@pytest.fixture
def stdout(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Stream]:
    """A stream that is no terminal, with no colour variables set."""
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(consoles, "_plain", False)
    yield _Stream(tty=False)


def _shown(text: str) -> str:
    """What a terminal is given for ``text``: controls replaced, a tab as a space."""
    return consoles._CONTROL.sub("\ufffd", text.replace("\t", " "))


@given(st.text(), st.text())
def test_escaped_text_prints_as_it_is_alone_and_beside_markup(first: str, second: str) -> None:
    assert plain(escape(first)) == _shown(first)
    # a trailing backslash never escapes what follows (a path "dir\\" before "[/]")
    assert plain(escape(first) + escape(second)) == _shown(first) + _shown(second)
    assert parse(f"[bold]{escape(first)}[/]") == ([(_shown(first), "1")] if first else [])


@pytest.mark.parametrize(
    ("markup", "spans"),
    [
        ("[bold]a[/] b", [("a", "1"), (" b", "")]),
        ("[bold red]x[/]", [("x", "1;31")]),
        ("[dim][yellow]y[/]z[/]", [("y", "2;33"), ("z", "2")]),
        ("[link=evil]x[/link] [/] [1]", [("[link=evil]x[/link] [/] [1]", "")]),  # not tags: text
        ("\\[bold]", [("[bold]", "")]),
        ("C:\\\\[bold]x[/]", [("C:\\", ""), ("x", "1")]),  # an even run of backslashes: a tag
    ],
)
def test_the_markup(markup: str, spans: list[tuple[str, str]]) -> None:
    assert parse(markup) == spans


def test_control_characters_never_reach_the_terminal(
    stdout: _Stream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model name a server returned with an escape sequence (a retitled terminal, a hidden
    link) prints as replacement characters, styled or not, in a line and in a table."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    name = "m\x1b]0;owned\x07\x1b[2Jx\x9b31m"
    table = Table("model", title=escape(name))
    table.add_row(escape(name))
    Console(file=stdout).print(f"[bold]{escape(name)}[/]")
    Console(file=stdout).print(table)
    written = stdout.getvalue()
    assert "\x07" not in written and "\x9b" not in written
    assert ESC.sub("", written).count("\x1b") == 0  # only our own SGR sequences
    assert "m\ufffd]0;owned\ufffd\ufffd[2Jx\ufffd31m" in written


def test_colour_only_on_a_terminal_and_never_when_plain(
    stdout: _Stream, monkeypatch: pytest.MonkeyPatch
) -> None:
    Console(file=stdout).print("[green]ok[/]")
    assert stdout.getvalue() == "ok\n"  # a pipe: no colour
    monkeypatch.setattr(stdout, "_tty", True)
    Console(file=stdout).print("[green]ok[/]")
    assert stdout.getvalue().endswith("\x1b[32mok\x1b[0m\n")
    for plain_by in ("NO_COLOR", "TERM", "flag"):
        with monkeypatch.context() as m:
            if plain_by == "NO_COLOR":
                m.setenv("NO_COLOR", "1")
            elif plain_by == "TERM":
                m.setenv("TERM", "dumb")
            else:
                m.setattr(consoles, "_plain", False)
                consoles.use_plain_output()
            start = len(stdout.getvalue())
            table = Table("a")
            table.add_row("[red]b[/]")
            Console(file=stdout).print("[green]ok[/]", table)
            with Console(file=stdout).status("waiting") as line:
                line.update("still waiting", force=True)
            assert "\x1b" not in stdout.getvalue()[start:], plain_by
            assert "\r" not in stdout.getvalue()[start:], plain_by


def test_a_terminal_wraps_long_lines_a_pipe_never(
    stdout: _Stream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "30")
    long = "word " * 20
    Console(file=stdout).print(long)
    assert stdout.getvalue().count("\n") == 1  # a pipe: one line for grep
    monkeypatch.setattr(stdout, "_tty", True)
    stdout.seek(0)
    stdout.truncate()
    Console(file=stdout).print(long)
    lines = stdout.getvalue().splitlines()
    assert len(lines) > 1 and all(len(line) <= 30 for line in lines)
    assert " ".join(lines).split() == long.split()  # cut at spaces, nothing lost
    stdout.seek(0)
    stdout.truncate()
    Console(soft_wrap=True, file=stdout).print(long)  # a command to copy: whole even on a terminal
    assert stdout.getvalue().count("\n") == 1


def _table(name: str) -> Table:
    table = Table(title="Per model")
    table.add_column("model")
    table.add_column("score", justify="right")
    table.add_column("note")
    table.add_row(escape(name), "0.612", "judged by two models, agreement kappa 0.71")
    table.add_row("b", "[dim]—[/]", "")
    return table


@pytest.mark.parametrize(
    "name", ["a model with a rather long name indeed", "模型 名称 很长 的 那种"]
)
def test_a_table_fits_the_terminal_and_keeps_its_columns(name: str) -> None:
    natural = _table(name).lines(None, styled=False)
    assert len({width_of(line) for line in natural[1:]}) == 1  # every row as wide (CJK too)
    for width in (80, 40, 25):
        lines = _table(name).lines(width, styled=True)
        bare = [ESC.sub("", line) for line in lines]
        assert len({width_of(line) for line in bare[1:]}) == 1
        assert all(width_of(line) <= width for line in bare[1:]), (width, bare)
        if width >= 40:  # room for the longest word: wrapped at spaces, no word cut
            cells = " ".join(bare[1:]).replace("│", " ").replace("┃", " ").split()
            assert [w for w in name.split() if w not in cells] == []
    assert "0.612" in " ".join(natural)


def test_a_stream_that_cannot_write_the_boxes_gets_ascii(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = _Stream(tty=False, encoding="ascii")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    Console(file=stream).print(_table("é"))
    written = stream.getvalue()
    written.encode("ascii")  # every character writable
    assert "+---" in written and "| ? " in written


def test_a_row_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="a row of 1 cells in a table of 3"):
        _table("x").add_row("only one")


def test_a_stream_s_own_terminal_gives_the_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages on standard error are fitted to its terminal when the output goes to a file."""
    import fcntl
    import os
    import struct
    import termios

    monkeypatch.delenv("COLUMNS", raising=False)
    main, side = os.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 37, 0, 0))
    with open(side, "w", closefd=True) as terminal:
        assert consoles.terminal_columns(terminal) == 37
        lines = _table("a model with a rather long name indeed").lines(37, styled=False)
        assert all(width_of(line) <= 37 for line in lines[1:])
    os.close(main)


def test_two_status_lines_share_one_line_and_printing_goes_above(
    stdout: _Stream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
    out = Console(file=stdout)
    with out.status("scoring") as scoring:
        with out.status("judging") as judging:
            scoring.update("scored tal, 3/8 tasks", bar="[green]━━[/]", force=True)
            judging.update("judging 10/20", force=True)
            last = stdout.getvalue().rsplit("\r", 1)[-1]
            assert "scored tal, 3/8 tasks (0 s)" in last and "judging 10/20 (0 s)" in last
            out.print("a warning")
            assert "\r\x1b[Ka warning\n\r" in stdout.getvalue()  # above, then redrawn
        assert "judging" not in stdout.getvalue().rsplit("\r", 1)[-1]  # one left
    assert stdout.getvalue().endswith("\r\x1b[K")  # the line erased at the end


def test_unicode_that_moves_or_hides_text_is_measured_and_shown_safely(stdout: _Stream) -> None:
    right_to_left = "model\u202eevil"
    assert "\u202e" not in plain(escape(right_to_left))
    assert width_of("a\u200bb\u200dc") == 3  # zero-width characters take no column
    assert plain("tab\there") == "tab here"
    ascii_stream = _Stream(tty=False, encoding="ascii")
    Console(file=ascii_stream).print(_table("医疗视频模型"))
    rows = ascii_stream.getvalue().splitlines()[1:]
    assert len({len(r) for r in rows}) == 1, rows  # "?" measured as what it is: one column


def test_a_narrow_terminal_wraps_at_spaces_before_it_cuts_a_word() -> None:
    table = Table("label", "value", "95 % interval")
    table.add_row("completeness", "-1.762", "0.512-0.731")
    lines = table.lines(44, styled=False)
    cells = " ".join(lines).replace("│", " ").replace("┃", " ").split()
    assert "-1.762" in cells and "completeness" in cells, lines
    assert all(width_of(line) <= 44 for line in lines)
