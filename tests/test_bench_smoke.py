"""Every benchmark script runs: each at a tiny size, as a fresh process, as a developer runs it.

A script that crashes (an API it calls changed under it) fails here, not on the day someone
needs its figures. The sizes are chosen to exercise every stage of each script, not to measure
anything; the figures themselves are printed by the scripts at their default sizes
(docs/performance.md).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parent.parent / "bench"
SRC = Path(__file__).parent.parent / "src"

# script -> arguments that make it small (every stage still runs)
SMOKE: dict[str, list[str]] = {
    "bench_blas.py": ["--samples", "200", "--rounds", "1", "--busy", "1"],
    "bench_board_load.py": [
        "--entries",
        "30",
        "--clients",
        "2",
        "--seconds",
        "0.5",
        "--skip-postgres",
    ],
    "bench_cold.py": ["--rounds", "1", "--samples", "300"],
    "bench_consensus.py": [
        "--samples",
        "200",
        "--seeds",
        "1",
        "--fractions",
        "0.9",
        "--trials",
        "2",
        "--replicates",
        "20",
    ],
    "bench_embed.py": ["--samples", "60", "--repeat", "1"],
    "bench_evaluate.py": ["--repeat", "1", "--samples", "300", "--large", "2000"],
    "bench_evidence.py": ["--samples", "200", "--others", "200", "--repeat", "1"],
    "bench_first_run.py": ["--rounds", "1", "--busy", "0", "--ways", "default"],
    "bench_formats.py": ["--sizes", "300", "--repeat", "1"],
    "bench_hostile.py": ["--samples", "120", "--length", "400", "--budget", "0.01"],
    "bench_judge_agreement.py": [
        "--rounds",
        "1",
        "--samples",
        "120",
        "--replicates",
        "20",
        "--sims",
        "20",
        "--clusters",
        "8",
    ],
    "bench_intervals.py": ["--sims", "20", "--replicates", "50", "--clusters", "8"],
    "bench_judge.py": ["--samples", "300", "--latency", "0.01"],
    "bench_judged.py": ["--samples", "300", "--repeat", "2", "--latency", "0.01"],
    "bench_load.py": [
        "--requests",
        "4",
        "--concurrency",
        "2",
        "--submissions",
        "1",
        "--skip-scaled",
    ],
    "bench_medsg.py": ["--items", "200", "--runs", "1"],
    "bench_parsers.py": ["--sizes", "200,400", "--runs", "1"],
    "bench_ranks.py": ["--boards", "5", "--replicates", "100"],
    "bench_rewards.py": [
        "--completions",
        "100",
        "--runs",
        "1",
        "--latency",
        "0.01",
        "--captions",
        "20",
        "--samples",
        "400",
    ],
    "bench_server.py": ["--entries", "30", "--repeat", "2", "--samples", "300"],
    "bench_statistics.py": ["--entries", "5", "--runs", "1"],
    "bench_stored_files.py": ["--mb", "1", "--rounds", "1"],
    "bench_upload.py": ["--mb", "1"],
    "bench_web.py": ["--entries", "30", "--repeat", "2"],
}
HELPERS = {"board_fixture.py", "serving.py"}  # imported by the scripts, not run


def test_every_script_has_a_smoke_run() -> None:
    scripts = {p.name for p in BENCH.glob("*.py")} - HELPERS
    assert scripts == set(SMOKE)


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_script_runs_at_a_tiny_size(script: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEDVIDBENCH_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    env["MEDVIDBENCH_CACHE_DIR"] = os.environ.get("MEDVIDBENCH_CACHE_DIR", "")
    if not env["MEDVIDBENCH_CACHE_DIR"]:
        del env["MEDVIDBENCH_CACHE_DIR"]
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *SMOKE[script]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"\d", done.stdout), f"no figure printed: {done.stdout!r}"
