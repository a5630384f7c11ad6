"""Adding a built-in benchmark changes only its own folder and one entry-point line (#34).

A copy of the repository gets a throwaway benchmark (the guide's QuizBench sample as the
package ``medvidbench.benchmarks.quizbench``) and one line in its ``pyproject.toml``; nothing
else is edited. Installed the way pip would install the edited project (its entry points in a
``*.dist-info`` folder), the copy's own layer contracts, package-layout check and contract
tests pass, with the new benchmark among those they check.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.plugins.install import ROOT
from tests.test_docs_sample import sample

LINE = 'quizbench = "medvidbench.benchmarks.quizbench:BENCHMARK"\n'
GROUP = '[project.entry-points."medvidbench.benchmarks"]\n'
SKIP = shutil.ignore_patterns(
    ".git",
    "node_modules",
    "artifacts",
    "__pycache__",
    "*.pyc",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "*.egg-info",
)


def _copy_with_a_new_benchmark(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=SKIP)
    package = copy / "src" / "medvidbench" / "benchmarks" / "quizbench"
    package.mkdir()
    (package / "__init__.py").write_text(sample(), encoding="utf-8")
    project = copy / "pyproject.toml"
    text = project.read_text(encoding="utf-8")
    assert GROUP in text
    project.write_text(text.replace(GROUP, GROUP + LINE, 1), encoding="utf-8")
    return copy


def _install(copy: Path, site: Path) -> None:
    """The edited project's entry points, as pip would write them."""
    import tomllib

    points = tomllib.loads((copy / "pyproject.toml").read_text())["project"]["entry-points"]
    info = site / "medvidbench_copy-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: medvidbench-copy\nVersion: 0\n")
    lines = [f"{k} = {v}" for k, v in points["medvidbench.benchmarks"].items() if k == "quizbench"]
    (info / "entry_points.txt").write_text("[medvidbench.benchmarks]\n" + "\n".join(lines) + "\n")


def test_a_new_benchmark_is_its_folder_and_one_line(tmp_path: Path) -> None:
    copy = _copy_with_a_new_benchmark(tmp_path)
    changed = subprocess.run(
        ["diff", "-rq", str(ROOT / "src"), str(copy / "src"), "-x", "__pycache__"],
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    assert changed == [f"Only in {copy}/src/medvidbench/benchmarks: quizbench"], changed
    site = tmp_path / "site"
    _install(copy, site)
    env = {
        **os.environ,
        # the copy's code first; its edited entry points beside the installed ones
        "PYTHONPATH": os.pathsep.join([str(copy / "src"), str(site), str(copy)]),
        "MEDVIDBENCH_PLUGIN_CACHE": "0",
    }
    env.pop("MEDVIDBENCH_BENCHMARK", None)
    found = subprocess.run(
        [sys.executable, "-c", "from medvidbench import benchmarks; print(benchmarks.slugs())"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "'quizbench'" in found.stdout, found.stdout + found.stderr
    lint = Path(sys.executable).with_name("lint-imports")
    layers = subprocess.run(
        [str(lint), "--no-cache"], cwd=copy, env=env, capture_output=True, text=True, timeout=600
    )
    assert layers.returncode == 0, layers.stdout[-3000:] + layers.stderr[-2000:]
    checks = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_docs_layout.py",
            "tests/test_layers.py",
            "tests/test_docs.py",
            "tests/test_contract.py::test_every_installed_benchmark_conforms",
            "tests/test_kernel_rules.py",
        ],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert checks.returncode == 0, checks.stdout[-4000:] + checks.stderr[-2000:]
    assert (
        "quizbench"
        in subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "--collect-only",
                "-p",
                "no:cacheprovider",
                "tests/test_contract.py",
            ],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        ).stdout
    )
