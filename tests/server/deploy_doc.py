"""docs/deploy.md's fenced code blocks, as the tests that run what it says read them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DEPLOY_DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


@dataclass(frozen=True)
class Block:
    """One fenced block: its language tag (may be empty), text and first line number."""

    lang: str
    text: str
    line: int


def code_blocks(path: Path = DEPLOY_DOC) -> list[Block]:
    """Every fenced block of the file, in order (indented fences included)."""
    blocks, lines = [], path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if opening is None:
            i += 1
            continue
        indent, start, body = opening.group(1), i + 1, []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        blocks.append(Block(opening.group(2), "\n".join(body), start + 1))
        i += 1
    return blocks


def commands(block: Block) -> list[str]:
    """The shell commands of a block, comments removed (one per line; none are continued)."""
    out = []
    for line in block.text.splitlines():
        command = re.sub(r"\s+#\s.*$", "", line).strip()
        if command and not command.startswith("#"):
            out.append(command)
    return out


def cron_line() -> str:
    """The nightly backup line (the block holding a five-field cron schedule)."""
    (line,) = [
        ln
        for b in code_blocks()
        for ln in b.text.splitlines()
        if re.match(r"^[\d*/,-]+( [\d*/,-]+){4} ", ln)
    ]
    return line


def ini_block(marker: str) -> str:
    """The ``ini`` block holding ``marker`` (the backup's systemd service and timer)."""
    (text,) = [b.text for b in code_blocks() if b.lang == "ini" and marker in b.text]
    return text
