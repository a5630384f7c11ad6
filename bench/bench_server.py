"""Benchmark: the leaderboard server core (issues: server core; speed, item 6).

1. The first submission after a start, as a user meets it: ``medvidbench serve`` starts on a
   fresh data folder (demo set), and the moment its health check answers, the demo's strong
   predictions (6,245 samples) are uploaded through the API; printed: upload to ``scored``, in
   seconds (target: under 1 s).
2. In one process on the embedded default (SQLite database and queue, consumer threads in the
   same process), upload to scored: the first submission apart, then the median of the others.
3. Ranking a 1,000-entry board whose scored entries each carry a stored bootstrap of
   ``--replicates`` replicates (as scoring leaves them), rank intervals included: the first
   time in the process (every bootstrap read and decoded), after a change (one more submission
   scored: the board is ranked again), and from the cache of its generation (nothing
   changed). Target: under 50 ms after a change. After a change the CPU time of this process
   is printed too (steadier than wall time on a loaded machine).

Usage: python bench/bench_server.py [--entries 1000] [--repeat 7] [--samples 6245]
       [--replicates 1000] [--parts start,upload,board]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def main() -> None:
    from board_fixture import populate_board  # beside this script

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="start,upload,board", help="which parts to run")
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--samples", type=int, default=6245, help="of each uploaded file")
    parser.add_argument("--replicates", type=int, default=1000, help="per board entry")
    args = parser.parse_args()
    parts = args.parts.split(",")
    if "start" in parts:
        first_after_start()

    from medvidbench.benchmarks.medvidbench.synth import write_synthetic
    from medvidbench.server.services.boards import board_rows
    from medvidbench.server.services.submissions import submit
    from medvidbench.server.services.test_sets import current_benchmark
    from serving import embedded  # beside this script

    with tempfile.TemporaryDirectory() as tmp:
        files = write_synthetic(
            Path(tmp) / "synth", samples=args.samples, seed=0, archetypes=("strong", "weak")
        )
        # Upload to scored, with the queue consumed by threads of this process.
        latencies = []
        with embedded(Path(tmp) / "data", files["ground_truth"]) as server:
            runtime, user = server.runtime, server.user
            bench = current_benchmark(runtime, runtime.definition(None).slug)  # the test set
            for i in range(args.repeat if "upload" in parts else 0):
                data = (
                    files["strong"]
                    .read_bytes()
                    .replace(b'"prediction":"', f'"prediction":"{i} '.encode(), 1)
                )
                started = time.perf_counter()
                sub = submit(runtime, user, data, f"latency-{i}")
                server.wait(sub.id, ("scored",))
                latencies.append(time.perf_counter() - started)
        if "upload" in parts:
            rest = latencies[1:] or latencies
            print(
                f"upload to scored, {args.samples:,}-sample file, in-process embedded default: "
                f"first {latencies[0]:.2f} s, then median {statistics.median(rest):.2f} s over "
                f"{len(rest)} (min {min(rest):.2f}, max {max(rest):.2f})"
            )
        if "board" not in parts:
            return
        # A community board of N scored submissions (rows inserted directly, as scoring would).
        populate_board(runtime, bench.id, user.id, args.entries, replicates=args.replicates)
        started = time.perf_counter()
        rows = board_rows(runtime, "community")
        first = time.perf_counter() - started

        def changed(n: int) -> list[Any]:
            # one more submission scored (its evaluation stored, the generation bumped)
            populate_board(
                runtime,
                bench.id,
                user.id,
                1,
                seed=n,
                replicates=args.replicates,
                first=args.entries + n,
            )
            started, cpu = time.perf_counter(), time.process_time()
            board_rows(runtime, "community")
            return time.perf_counter() - started, time.process_time() - cpu

        timings = [changed(n) for n in range(args.repeat)]
        after, after_cpu = [t for t, _ in timings], [c for _, c in timings]
        cached = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            rows = board_rows(runtime, "community")
            cached.append(time.perf_counter() - started)
        with_intervals = sum(r.rank_interval is not None for r in rows)
        print(
            f"rank and prepare a {len(rows):,}-entry board (SQLite; {with_intervals:,} rows with "
            f"rank intervals, {args.replicates:,} stored replicates each): first in the process "
            f"{first * 1000:.1f} ms; after a change median {statistics.median(after) * 1000:.1f}"
            f" ms over {len(after)} (min {min(after) * 1000:.1f}, max {max(after) * 1000:.1f}; "
            f"CPU time median {statistics.median(after_cpu) * 1000:.1f} ms, min "
            f"{min(after_cpu) * 1000:.1f}); "
            f"from the cache median {statistics.median(cached) * 1000:.2f} ms (target: under "
            "50 ms after a change)"
        )


def first_after_start() -> None:
    """Start a real server on a fresh data folder and time its first submission."""
    import httpx

    from serving import account_with_token, clean_env, serve  # beside this script

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        env = clean_env(MEDVIDBENCH_QUOTA_PER_DAY="0")
        token = account_with_token(data, env)
        with serve(data, env) as live:
            demo = (data / "demo" / "medvidbench" / "predictions_strong.json").read_bytes()
            mine = {"Authorization": f"Bearer {token}"}  # queued ones are the owner's to see
            started = time.perf_counter()
            answer = httpx.post(
                f"{live.url}/api/v1/submissions",
                headers=mine,
                files={"file": ("strong.json", demo, "application/json")},
                data={"model_name": "First after start"},
                timeout=60,
            )
            accepted = time.perf_counter() - started
            status_url = f"{live.url}/api/v1/submissions/{answer.json()['id']}"
            while httpx.get(status_url, headers=mine).json()["status"] != "scored":
                time.sleep(0.01)
            scored = time.perf_counter() - started
    print(
        f"first submission after a start (server answered {live.started_in:.2f} s after "
        f"launch): accepted {accepted:.2f} s after upload began, scored {scored:.2f} s after "
        "(target < 1 s)"
    )


if __name__ == "__main__":
    main()
