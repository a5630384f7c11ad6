"""Benchmark: a user's first submission on a new machine (issue #36 item 1).

From nothing: an empty data folder and an empty model cache (no prepared weights, no label
vectors); an account and a token made with the command line, ``medvidbench serve`` started (it
writes its 6,245-question demo set and warms up on a thread), and the demo's strong file
submitted with ``medvidbench submit --wait`` the moment the health check answers (so that the
first job and the warm-up run at once). Timed: the start
(until the health check answers), and the submission (until its scores are printed), each run
from scratch, alternating the default (one BLAS thread) with ``OPENBLAS_NUM_THREADS`` set to the
number of cores (OpenBLAS's own default, what serve ran with before), optionally under busy
loops (other users' jobs on a shared machine). Medians over ``--rounds``.

Usage: python bench/bench_first_run.py [--rounds 3] [--busy 2] [--ways both|default]
(``--ways default`` runs the default alone: what the smoke test runs, each way being the same
code under another environment)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from serving import CLI, account_with_token, busy_loops, clean_env, serve


def _first_run(env: dict[str, str]) -> tuple[float, float]:
    """Seconds to start, and to the first submission's scores, from an empty machine."""
    scratch = Path(tempfile.mkdtemp(prefix="mvb-first-"))
    data, cache = scratch / "data", scratch / "cache"
    env = {**env, "MEDVIDBENCH_CACHE_DIR": str(cache)}
    try:
        subprocess.run([*CLI, "db", "upgrade", "--data-dir", str(data)], env=env, check=True,
                       capture_output=True)  # fmt: skip
        token = account_with_token(data, env)  # made first: the upload follows the start at once
        with serve(data, env, timeout=300) as server:
            began = time.perf_counter()
            subprocess.run(
                [*CLI, "submit", str(data / "demo" / "medvidbench" / "predictions_strong.json"),
                 "--model-name",
                 "First", "--wait", "--server", server.url, "--token", token],
                check=True, capture_output=True, env=env,
            )  # fmt: skip
            return server.started_in, time.perf_counter() - began
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=int, default=2, help="busy loops running throughout")
    parser.add_argument("--ways", choices=("both", "default"), default="both")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    base = {
        k: v
        for k, v in clean_env().items()
        if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    ways = {
        "one thread (default)": base,
        f"{cores} threads": {**base, "OPENBLAS_NUM_THREADS": str(cores)},
    }
    if args.ways == "default":
        ways = dict(list(ways.items())[:1])
    found: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
    with busy_loops(args.busy):
        for _ in range(args.rounds):
            for way, env in ways.items():
                found[way].append(_first_run(env))
    print(
        f"first submission on a new machine (the demo's 6,245 questions, empty data folder "
        f"and model cache), {args.busy} busy loops, {args.rounds} alternating rounds:"
    )
    for way, runs in found.items():
        start = statistics.median(s for s, _ in runs)
        scored = statistics.median(t for _, t in runs)
        print(f"  {way:<22} start {start:6.2f} s   submit to scores {scored:6.2f} s")


if __name__ == "__main__":
    main()
