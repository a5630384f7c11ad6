"""Benchmark: what OpenBLAS's spinning threads cost a command on a busy machine (issue #36 item 1).

Two busy loops (processes spinning on the CPU, as other users' jobs do on a shared machine) run
throughout. ``medvidbench evaluate`` of a synthetic archetype is then timed, alternately, as it
runs by default (one BLAS thread: every command asks for it, :mod:`medvidbench.core.blas`) and
with ``OPENBLAS_NUM_THREADS`` set to the number of cores (OpenBLAS's own default, what every
command ran with before). Each run is a fresh process with the model cache already warm; the
figures are medians of wall time and CPU time (the child's user + system), and their ratios.

Usage: python bench/bench_blas.py [--samples 6245] [--rounds 5] [--busy 2]
    [--archetypes format-noisy,garbage]
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

from medvidbench import benchmarks
from serving import busy_loops  # beside this script


def _run(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one process."""
    began = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed: {child.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=6245)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--busy", type=int, default=2, help="busy loops running throughout")
    parser.add_argument("--archetypes", default="format-noisy,garbage")
    args = parser.parse_args()
    bench = benchmarks.get("medvidbench")
    assert bench.demo is not None
    folder = Path(tempfile.mkdtemp(prefix="mvb-blas-"))
    files = bench.demo.synthesise(folder, args.samples, 0)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    ways = {
        "one thread (default)": base,
        f"{cores} threads": {**base, "OPENBLAS_NUM_THREADS": str(cores)},
    }
    for name in args.archetypes.split(","):
        command = [
            sys.executable, "-m", "medvidbench", "evaluate", str(files[name]),
            "--ground-truth", str(files["ground_truth"]), "--json",
        ]  # fmt: skip
        _run(command, base)  # warm: the label vectors' cache, the page cache
        found: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
        with busy_loops(args.busy):
            for _ in range(args.rounds):
                for way, env in ways.items():
                    found[way].append(_run(command, env))
        print(f"evaluate {name} ({args.samples:,} samples), {args.busy} busy loops, "
              f"{args.rounds} alternating rounds:")  # fmt: skip
        medians = {}
        for way, runs in found.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            medians[way] = (wall, cpu)
            print(f"  {way:<22} wall {wall:6.2f} s   CPU {cpu:6.2f} s")
        (one_wall, one_cpu), (many_wall, many_cpu) = medians.values()
        print(f"  {cores} threads / one thread: wall {many_wall / one_wall:.2f}x, "
              f"CPU {many_cpu / one_cpu:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
