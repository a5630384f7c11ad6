"""Benchmark: upload to complete with an LLM judge (issue: the plug-in contract, item 4).

In one process on the embedded default (SQLite database and queue, consumer threads in the same
process), with the fake OpenAI-compatible judge (``medvidbench.core.judge.fake_server``) on
loopback answering each request after ``--latency`` seconds (default 0.2). Each submission is
the demo's strong predictions on a ``--samples`` test set, one answer marked so the file is new.
Printed: the first submission's time from upload to ``complete`` (every caption pair judged
afresh), then the median of the others (their pairs are in the judge's cache, but for the marked
one: what remains is the pipeline's own work: checking, scoring, judging what is new, intervals,
and the queue's hand-overs); then the score and judge steps alone, from their log's times.

Usage: python bench/bench_judged.py [--samples 2000] [--repeat 5] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()

    from sqlalchemy import select

    from medvidbench.benchmarks.medvidbench.synth import write_synthetic
    from medvidbench.core.config import Settings
    from medvidbench.core.judge.fake_server import FakeJudgeServer
    from medvidbench.server.jobs import attach_queue, start_embedded_consumer
    from medvidbench.server.runtime import Runtime
    from medvidbench.server.services.accounts import create_user
    from medvidbench.server.services.catalogue import load_benchmark
    from medvidbench.server.services.submissions import submit
    from medvidbench.server.store.db import transaction, upgrade
    from medvidbench.server.store.models import Submission, SubmissionEvent

    with tempfile.TemporaryDirectory() as tmp, FakeJudgeServer(latency=args.latency) as judge:
        files = write_synthetic(
            Path(tmp) / "synth", samples=args.samples, seed=0, archetypes=("strong",)
        )
        runtime = Runtime(
            Settings(
                data_dir=Path(tmp) / "data",
                benchmarks="medvidbench",
                quota_per_day=0,
                quota_per_month=0,
                judge_base_url=judge.url,
                judge_model="fake-judge",
                judge_cache_path=Path(tmp) / "judge-cache.sqlite3",
            )
        )
        upgrade(runtime.engine)
        load_benchmark(runtime, files["ground_truth"], demo=True)
        with transaction(runtime.sessions) as session:
            user = create_user(session, "bench", "bench-password-123", team="Bench")
        attach_queue(runtime)
        consumer = start_embedded_consumer(runtime, workers=2)
        latencies = []
        try:
            for i in range(args.repeat):
                data = (
                    files["strong"]
                    .read_bytes()
                    .replace(b'"prediction":"', f'"prediction":"{i} '.encode(), 1)
                )
                started = time.perf_counter()
                sub = submit(runtime, user, data, f"judged-{i}")
                while True:
                    with runtime.sessions() as session:
                        status = session.scalar(
                            select(Submission.status).where(Submission.id == sub.id)
                        )
                    if status in ("complete", "failed"):
                        break
                    time.sleep(0.005)
                if status != "complete":
                    raise SystemExit(f"submission {sub.id} {status}")
                latencies.append(time.perf_counter() - started)
        finally:
            consumer.stop(graceful=True)
        steps = _step_seconds(runtime, SubmissionEvent)
        rest = latencies[1:] or latencies
        print(
            f"upload to complete, {args.samples:,}-sample file, judge at {args.latency * 1000:.0f} "
            f"ms a request ({judge.requests:,} requests): first (fresh judgements) "
            f"{latencies[0]:.2f} s, then median {statistics.median(rest):.2f} s over {len(rest)} "
            f"(cached judgements; min {min(rest):.2f}, max {max(rest):.2f})"
        )
        for step, seconds in steps.items():
            later = seconds[1:] or seconds
            print(
                f"  the {step} step itself (its events' times): first {seconds[0]:.2f} s, then "
                f"median {statistics.median(later):.2f} s (min {min(later):.2f}, "
                f"max {max(later):.2f})"
            )


def _step_seconds(runtime: Any, event: Any) -> dict[str, list[float]]:
    """Each submission's score and judge step, from its start event to its end event."""
    from sqlalchemy import select

    with runtime.sessions() as session:
        rows = session.execute(
            select(event.submission_id, event.kind, event.at).order_by(event.id)
        ).all()
    marks: dict[tuple[int, str], Any] = {(sid, kind): at for sid, kind, at in rows}
    out: dict[str, list[float]] = {}
    for step, start, end in (
        ("score", "score started", "scored"),
        ("judge", "judge started", "judged"),
    ):
        for sid in sorted({sid for sid, _, _ in rows}):
            if (sid, start) in marks and (sid, end) in marks:
                gap = (marks[sid, end] - marks[sid, start]).total_seconds()
                out.setdefault(step, []).append(gap)
    return out


if __name__ == "__main__":
    main()
