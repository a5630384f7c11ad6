"""The consoles every command writes through, plain when asked.

Plain output: with ``--no-color`` or ``NO_COLOR`` set to any non-empty value, no console writes
a single escape sequence: no colour, no bold or italic, no cursor movement (so no live progress
bars or spinners). Rich alone drops only the colours under ``NO_COLOR``. Kept apart from
:mod:`medvidbench.cli.terminal` (the report renderings) so that every command, ``--help``
included, can import it for the cost of Rich's console alone.
"""

from __future__ import annotations

import os
import shutil

from rich.console import Console

_plain = False


def plain_output() -> bool:
    """Whether output must carry no escape sequence: ``--no-color`` or ``NO_COLOR``."""
    return _plain or os.environ.get("NO_COLOR", "") != ""


def console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A console for the command's output (``stderr``: for messages), plain when asked."""
    if not plain_output():
        return Console(stderr=stderr, soft_wrap=soft_wrap)
    width = shutil.get_terminal_size().columns  # a plain console is no terminal to Rich
    return Console(
        stderr=stderr,
        soft_wrap=soft_wrap,
        color_system=None,
        force_terminal=False,
        no_color=True,
        width=width,
    )


def use_plain_output(*existing: Console) -> None:
    """From now on every console is plain (``--no-color``), including ``existing`` ones made
    before the option was read (Rich has no public setter for this, hence the attributes)."""
    global _plain
    _plain = True
    for c in existing:
        c._color_system = None
        c._force_terminal = False
        c.no_color = True
