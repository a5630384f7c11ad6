"""Every ``pip install`` line the documentation gives resolves from a fresh clone.

medvidbench is not on a package index: a line that installs it names the checkout (``.`` or
``.[extra]``, run where the docs say, in the checkout) with extras pyproject.toml declares;
every other package it names must be on the index the machine uses, at the version given.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent
PIP = re.compile(r"pip install ([^`\n]+)")
REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9_.\-]+)(\[(?P<extras>[^\]]+)\])?(==(?P<version>\S+))?$"
)


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _requirements() -> list[tuple[str, str]]:
    """(where, requirement) of every pip install line of the documentation."""
    found = []
    for path in _documents():
        for n, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
            for match in PIP.finditer(line):
                words = shlex.split(match.group(1).split("#")[0])
                for word in words:
                    if word.startswith("-") or word in ("&&", "|"):
                        continue
                    if word.startswith(("(", ",")) or word.endswith((")", ",", ";")):
                        break  # the sentence goes on after the command
                    found.append((f"{path.relative_to(ROOT)}:{n}", word))
    return found


def test_the_docs_install_medvidbench_from_the_checkout_with_declared_extras() -> None:
    declared = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    found = _requirements()
    assert len(found) >= 4, found  # the deploy page's lines and the extras' packages
    for where, word in found:
        if word.startswith("."):
            extras = re.fullmatch(r"\.(\[(?P<extras>[^\]]+)\])?", word)
            assert extras, f"{where}: {word}"
            named = set((extras.group("extras") or "").split(",")) - {""}
            assert named <= declared, f"{where}: {word} names an extra pyproject.toml lacks"
        else:
            parsed = REQUIREMENT.match(word)
            assert parsed, f"{where}: {word!r} is not a requirement"
            assert parsed.group("name").lower() != "medvidbench", (
                f"{where}: medvidbench is on no package index; install the checkout ('.[server]')"
            )


def test_every_other_package_they_name_is_on_the_index() -> None:
    wanted = {}
    for where, word in _requirements():
        parsed = REQUIREMENT.match(word)
        if parsed and not word.startswith("."):
            wanted[parsed.group("name")] = (where, parsed.group("version"))
    for name, (where, version) in sorted(wanted.items()):
        done = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", name],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"{where}: {name} is not on the index: {done.stderr}"
        listed = done.stdout.split("Available versions:")[-1].splitlines()[0]
        assert version is None or version in [v.strip() for v in listed.split(",")], (
            f"{where}: {name}=={version} is not on the index"
        )


def test_the_checkout_installs_with_the_deploy_pages_extras(tmp_path: Path) -> None:
    """The deploy page's line, resolved (not installed) from this checkout."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--quiet",
         "--report", str(tmp_path / "report.json"), ".[server]"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "report.json").read_text()
    assert '"name": "medvidbench"' in report
