"""Benchmark: the leaderboard server core (issue: server core).

Targets: ranking and preparing the rows of a 1,000-entry board in under 50 ms; on the embedded
default (SQLite database, SQLite queue, consumer threads in the same process), a 6,245-sample
submission goes from upload to scored in under 5 s. Prints medians of repeated runs.

Usage: python bench/bench_server.py [--entries 1000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    from board_fixture import populate_board  # beside this script

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    from sqlalchemy import select

    from medvidbench.accounts import create_user
    from medvidbench.config import Settings
    from medvidbench.jobs import attach_queue, start_embedded_consumer
    from medvidbench.leaderboards import board_rows, load_benchmark
    from medvidbench.runtime import Runtime
    from medvidbench.store.db import transaction, upgrade
    from medvidbench.store.models import Submission
    from medvidbench.submissions import submit
    from medvidbench.synth import write_synthetic

    with tempfile.TemporaryDirectory() as tmp:
        files = write_synthetic(
            Path(tmp) / "synth", samples=6245, seed=0, archetypes=("strong", "weak")
        )
        runtime = Runtime(Settings(data_dir=Path(tmp) / "data", quota_per_day=0, quota_per_month=0))
        upgrade(runtime.engine)
        bench = load_benchmark(runtime, files["ground_truth"], demo=True)
        with transaction(runtime.sessions) as session:
            user = create_user(session, "bench", "bench-password-123", team="Bench")

        # Upload to scored, with the queue consumed by threads of this process.
        attach_queue(runtime)
        consumer = start_embedded_consumer(runtime, workers=2)
        latencies = []
        for i in range(args.repeat):
            data = (
                files["strong"]
                .read_bytes()
                .replace(b'"prediction":"', f'"prediction":"{i} '.encode(), 1)
            )
            started = time.perf_counter()
            sub = submit(runtime, user, data, f"latency-{i}")
            while True:
                with runtime.sessions() as session:
                    if (
                        session.scalar(select(Submission.status).where(Submission.id == sub.id))
                        == "scored"
                    ):
                        break
                time.sleep(0.005)
            latencies.append(time.perf_counter() - started)
        consumer.stop(graceful=True)
        print(
            f"upload to scored, 6,245-sample file, embedded default: median "
            f"{statistics.median(latencies):.2f} s over {args.repeat} (min "
            f"{min(latencies):.2f}, max {max(latencies):.2f})"
        )

        # A community board of N scored submissions (rows inserted directly, as scoring would).
        populate_board(runtime, bench.id, user.id, args.entries)
        runs = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            rows = board_rows(runtime, "community")
            runs.append(time.perf_counter() - started)
        print(
            f"rank and prepare a {len(rows):,}-entry board (SQLite): median "
            f"{statistics.median(runs) * 1000:.1f} ms over {args.repeat} (min "
            f"{min(runs) * 1000:.1f}, max {max(runs) * 1000:.1f})"
        )


if __name__ == "__main__":
    main()
