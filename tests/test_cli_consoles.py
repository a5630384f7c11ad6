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


@given(st.text())
def test_escaped_text_prints_as_it_is(text: str) -> None:
    shown = plain(escape(text))
    assert shown == consoles._CONTROL.sub("\ufffd", text)


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
