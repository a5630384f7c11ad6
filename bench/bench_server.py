"""Benchmark: the leaderboard server core (issue: server core).

Targets: ranking and preparing the rows of a 1,000-entry board in under 50 ms; on the embedded
default (SQLite database, SQLite queue, consumer threads in the same process), a 6,245-sample
submission goes from upload to scored in under 5 s. Prints medians of repeated runs.

Usage: python bench/bench_server.py [--entries 1000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    from sqlalchemy import select

    from medvidbench.accounts import create_user
    from medvidbench.config import Settings
    from medvidbench.jobs import attach_queue, start_embedded_consumer
    from medvidbench.leaderboards import board_rows, load_benchmark
    from medvidbench.profiles import METRIC_KEYS, SCORER_VERSION
    from medvidbench.runtime import Runtime
    from medvidbench.store.db import transaction, upgrade
    from medvidbench.store.models import Board, Entry, Evaluation, Submission
    from medvidbench.submissions import model_key, submit
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
        rng = random.Random(0)
        with transaction(runtime.sessions) as session:
            board = session.scalar(
                select(Board).where(Board.benchmark_id == bench.id, Board.kind == "community")
            )
            for i in range(args.entries):
                sub = Submission(
                    benchmark_id=bench.id,
                    user_id=user.id,
                    model_name=f"m{i}",
                    model_key=f"m{i}",
                    file_sha256=f"{i:064x}",
                    status="scored",
                )
                session.add(sub)
                session.flush()
                metrics = {
                    k: (rng.uniform(1, 5) if k.endswith("llm") else rng.random())
                    if rng.random() > 0.1
                    else None
                    for k in METRIC_KEYS
                }
                session.add(
                    Evaluation(
                        submission_id=sub.id,
                        profile="leaderboard-v1",
                        scorer_version=SCORER_VERSION,
                        metrics=metrics,
                        per_dataset={},
                        per_task={},
                    )
                )
                session.add(
                    Entry(
                        board_id=board.id,
                        submission_id=sub.id,
                        model_name=f"m{i}",
                        model_key=model_key(f"m{i}"),
                        team_name="Bench",
                    )
                )
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
