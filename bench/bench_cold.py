"""Benchmark: a cold ``medvidbench evaluate`` as a researcher runs it, against reading the files.

Every measurement is a fresh process, timed from spawn to exit, exactly as a user types it:
``medvidbench evaluate PRED --ground-truth GT --out REPORT.json`` (judge off), for the strong,
format-noisy and garbage archetypes of a 6,245-sample synthetic set. The floor is a fresh
``python -c`` that only ``json.load``s the same two files. Rounds interleave the floor and every
command, so that the machine's load falls on all of them alike; printed: the median time, the
median of the per-round ratios to that round's floor, and each command's peak memory (its own
``ru_maxrss``, from ``wait4``). Also ``import medvidbench`` and ``medvidbench --help``.

Targets (issue: speed): evaluate <= 5x the floor on strong, <= 12x on format-noisy, <= 20x on
garbage; import and --help under 150 ms.

The first round runs with an empty cache folder (``MEDVIDBENCH_CACHE_DIR`` in a temporary
folder: no model cache, no kept copy of the test set), as on a new machine, and is reported
apart; the medians are of the later rounds, which read the test set from the copy an earlier
round kept, as a researcher's next run against the same file does (a file changed less than
2 s before gets no copy, so the first round, and at most the second, read the file). The
first archetype is also timed reading the test-set file every time
(``MEDVIDBENCH_TESTSET_CACHE=0``), in the same rounds. The commands may write Python's
bytecode files (``PYTHONDONTWRITEBYTECODE`` is removed from their environment), as a user's
first run does.

Usage: python bench/bench_cold.py [--rounds 7] [--samples 6245] [--archetypes strong,...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARCHETYPES = ("strong", "format-noisy", "garbage")


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of one fresh process."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return elapsed, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--samples", type=int, default=6245)
    parser.add_argument("--archetypes", default=",".join(ARCHETYPES))
    args = parser.parse_args()
    from serving import synth  # beside this script

    exe = [sys.executable, "-m", "medvidbench"]
    # The installed console script is what a user runs; fall back to -m if it is not on PATH.
    script = Path(sys.executable).with_name("medvidbench")
    cli = [str(script)] if script.exists() else exe
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {**os.environ, "MEDVIDBENCH_CACHE_DIR": str(folder / "cache")}
        # As on a user's machine, the first run leaves its compiled bytecode for the next ones
        # (an environment that forbids writing it would time the compiler on every run).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        synth(folder, args.samples)
        gt = folder / "ground_truth.json"
        commands: dict[str, list[str]] = {
            "floor": [
                sys.executable,
                "-c",
                "import json,sys; json.load(open(sys.argv[1])); json.load(open(sys.argv[2]))",
                str(folder / "predictions_strong.json"),
                str(gt),
            ],
            "import medvidbench": [sys.executable, "-c", "import medvidbench"],
            "medvidbench --help": [*cli, "--help"],
        }
        envs = {name: env for name in commands}
        for n, name in enumerate(args.archetypes.split(",")):
            commands[f"evaluate {name}"] = [
                *cli,
                "evaluate",
                str(folder / f"predictions_{name}.json"),
                "--ground-truth",
                str(gt),
                "--out",
                str(folder / f"report_{name}.json"),
            ]
            envs[f"evaluate {name}"] = env
            if n == 0:  # the same, reading the test-set file instead of the kept copy
                commands["  file read, no copy"] = commands[f"evaluate {name}"]
                envs["  file read, no copy"] = {**env, "MEDVIDBENCH_TESTSET_CACHE": "0"}
        first = {name: timed(cmd, envs[name]) for name, cmd in commands.items()}
        times: dict[str, list[float]] = {name: [] for name in commands}
        ratios: dict[str, list[float]] = {name: [] for name in commands}
        peaks: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            row = {name: timed(cmd, envs[name]) for name, cmd in commands.items()}
            for name, (seconds, peak) in row.items():
                times[name].append(seconds)
                ratios[name].append(seconds / row["floor"][0])
                peaks[name].append(peak)
    print(f"{args.samples:,} samples, {args.rounds} interleaved rounds after a first, cold one")
    print(f"{'command':<26}{'first (s)':>11}{'median (s)':>12}{'x floor':>9}{'peak MiB':>10}")
    for name in commands:
        print(
            f"{name:<26}{first[name][0]:>11.3f}{statistics.median(times[name]):>12.3f}"
            f"{statistics.median(ratios[name]):>9.1f}{max(peaks[name]):>10.0f}"
        )


if __name__ == "__main__":
    main()
