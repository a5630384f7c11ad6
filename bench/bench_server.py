"""Benchmark: the leaderboard server core (issues: server core; speed, item 6).

1. The first submission after a start, as a user meets it: ``medvidbench serve`` starts on a
   fresh data folder (demo set), and the moment its health check answers, the demo's strong
   predictions (6,245 samples) are uploaded through the API; printed: upload to ``scored``, in
   seconds (target: under 1 s).
2. In one process on the embedded default (SQLite database and queue, consumer threads in the
   same process), upload to scored: the first submission apart, then the median of the others.
3. Ranking a 1,000-entry board: computed from the database (a change happened), and served from
   the cache of its generation (nothing changed). Target: under 50 ms.

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

    from medvidbench.benchmarks.medvidbench.synth import write_synthetic
    from medvidbench.core.config import Settings
    from medvidbench.server.jobs import attach_queue, start_embedded_consumer
    from medvidbench.server.runtime import Runtime
    from medvidbench.server.services.accounts import create_user
    from medvidbench.server.services.boards import board_rows
    from medvidbench.server.services.catalogue import load_benchmark
    from medvidbench.server.services.submissions import submit
    from medvidbench.server.store.db import transaction, upgrade
    from medvidbench.server.store.models import Submission

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
        rest = latencies[1:] or latencies
        print(
            f"upload to scored, 6,245-sample file, in-process embedded default: first "
            f"{latencies[0]:.2f} s, then median {statistics.median(rest):.2f} s over "
            f"{len(rest)} (min {min(rest):.2f}, max {max(rest):.2f})"
        )

        # A community board of N scored submissions (rows inserted directly, as scoring would).
        populate_board(runtime, bench.id, user.id, args.entries)
        from medvidbench.server.services.boards import _ranked_rows

        for label, fetch in (
            ("computed", lambda: _ranked_rows(runtime, "community", bench.id)),
            ("from the cache", lambda: board_rows(runtime, "community")),
        ):
            runs = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                rows = fetch()
                runs.append(time.perf_counter() - started)
            print(
                f"rank and prepare a {len(rows):,}-entry board (SQLite), {label}: median "
                f"{statistics.median(runs) * 1000:.1f} ms over {args.repeat} (min "
                f"{min(runs) * 1000:.1f}, max {max(runs) * 1000:.1f})"
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
    first_after_start()
    main()
