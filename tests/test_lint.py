"""The checks pre-commit runs, run by the test suite too: CI refuses what a hook would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["mypy", "src"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_the_tree_passes(command: list[str]) -> None:
    # mypy's incremental cache outside the checkout, so that a fresh clone (CI) starts warm: it
    # is keyed by each file's hash, so a changed file is checked again whatever the cache says
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "medvidbench-mypy"
    env = {
        **os.environ,
        "MYPY_CACHE_DIR": str(cache / f"py{sys.version_info[0]}{sys.version_info[1]}"),
    }
    done = subprocess.run(
        [sys.executable, "-m", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
