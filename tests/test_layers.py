"""The layers hold: import-linter checks the contracts written in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    count = len(declared["contracts"])  # every contract written down was checked and kept
    assert count >= 6 and f"Contracts: {count} kept, 0 broken." in proc.stdout
