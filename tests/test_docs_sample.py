"""The guide's sample benchmark (docs/adding-a-benchmark.md, section 2) is code that works:
extracted as printed, it passes ``mypy --strict``, and the conformance kit finds nothing wrong
with it (#34: the old sample used names it never imported)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from medvidbench.testing import check_benchmark

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "adding-a-benchmark.md"


def sample() -> str:
    """The first Python block of section 2."""
    section = GUIDE.read_text(encoding="utf-8").split("## 2. The kernel", 1)[1]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0] + "\n"


def _module(tmp_path: Path) -> Path:
    path = tmp_path / "quizbench.py"
    path.write_text(sample(), encoding="utf-8")
    return path


def test_the_sample_passes_mypy_strict(tmp_path: Path) -> None:
    path = _module(tmp_path)
    # mypy's incremental cache outside the checkout, as tests/test_lint.py keeps it: what the
    # sample imports (the package, its dependencies' stubs) is checked once per machine, and
    # the sample itself, a new file in a new folder, every time
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "medvidbench-mypy"
    where = cache / f"docs-sample-py{sys.version_info[0]}{sys.version_info[1]}"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(where), str(path)],
        cwd=tmp_path,  # no project configuration: the sample stands alone
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_sample_conforms(tmp_path: Path) -> None:
    path = _module(tmp_path)
    spec = importlib.util.spec_from_file_location("guide_quizbench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        assert check_benchmark(module.BENCHMARK, tmp_path / "demo") == []
    finally:
        del sys.modules[spec.name]
