"""A file of settings read as systemd reads an ``EnvironmentFile=`` (``medvidbench --env-file``):
the service's own ``/etc/medvidbench/env`` for a command run outside the units, a cron job's,
with no shell between (a shell's ``.`` runs the file instead of reading it).
"""

from __future__ import annotations

import re
from pathlib import Path

from medvidbench.core.errors import UsageError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read_environment_file(path: Path) -> dict[str, str]:
    """The variables of a file as systemd reads an ``EnvironmentFile=``: ``KEY=value`` lines,
    ``#`` and ``;`` comment lines, whitespace around the value dropped. In a value, text in
    double quotes is taken as it is but for ``\\"``, ``\\\\``, ``\\$`` and ``\\```
    (the character after the backslash); text in single quotes as it is; elsewhere a backslash
    takes the next character as it is; a backslash at the end of a line continues the value on
    the next, and quoted text may span lines. Nothing is expanded and no shell reads it, so a
    value may hold spaces, ``$``, ``&`` or ``;`` (a shell's ``.`` runs those). Unlike systemd,
    which skips a line it cannot read, a line that is not ``KEY=value`` stops the command.

    Raises:
        UsageError: the file cannot be read, a line is not ``KEY=value``, or a quote is not
            closed (the line's number said).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--env-file {str(path)!r}: {exc}") from None
    out: dict[str, str] = {}
    lines = text.replace("\r\n", "\n").split("\n")
    n = 0
    while n < len(lines):
        number, line = n + 1, lines[n].strip()
        n += 1
        if not line or line.startswith(("#", ";")):
            continue
        key, sep, rest = line.partition("=")
        key = key.strip()
        if not sep or not _NAME.fullmatch(key):
            raise UsageError(f"--env-file {str(path)!r}, line {number}: expected KEY=value")
        value: list[str] = []
        rest, quote, kept = rest.lstrip(), "", 0
        while True:
            i = 0
            while i < len(rest):
                c = rest[i]
                if quote == "'":
                    if c == "'":
                        quote, kept = "", len(value)
                    else:
                        value.append(c)
                elif quote == '"':
                    if c == '"':
                        quote, kept = "", len(value)
                    elif c == "\\" and i + 1 < len(rest):
                        i += 1
                        escaped = rest[i]
                        value.append(escaped if escaped in '"\\`$' else "\\" + escaped)
                    else:
                        value.append(c)
                elif c in "'\"":
                    quote = c
                elif c == "\\" and i + 1 < len(rest):
                    i += 1
                    value.append(rest[i])
                    kept = len(value)
                else:
                    value.append(c)
                    if not c.isspace():
                        kept = len(value)
                i += 1
            continues = rest.endswith("\\") and not rest.endswith("\\\\")
            if quote:
                if n >= len(lines):
                    raise UsageError(
                        f"--env-file {str(path)!r}, line {number}: a quote is not closed"
                    )
                value.append("\n")
            elif continues:
                if value and value[-1] == "\\":
                    value.pop()
            else:
                break
            if n >= len(lines):
                break
            rest, n = lines[n], n + 1
        out[key] = "".join(value[:kept] if not quote else value)
    return out
