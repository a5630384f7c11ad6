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

    from medvidbench.benchmarks.medvidbench.synth import write_synthetic
    from medvidbench.core.judge.fake_server import FakeJudgeServer
    from medvidbench.server.services.submissions import submit
    from medvidbench.server.store.models import SubmissionEvent
    from serving import embedded  # beside this script

    with tempfile.TemporaryDirectory() as tmp, FakeJudgeServer(latency=args.latency) as judge:
        files = write_synthetic(
            Path(tmp) / "synth", samples=args.samples, seed=0, archetypes=("strong",)
        )
        latencies = []
        with embedded(
            Path(tmp) / "data",
            files["ground_truth"],
            benchmarks="medvidbench",
            judge_base_url=judge.url,
            judge_model="fake-judge",
            judge_cache_path=Path(tmp) / "judge-cache.sqlite3",
        ) as server:
            runtime = server.runtime
            for i in range(args.repeat):
                data = (
                    files["strong"]
                    .read_bytes()
                    .replace(b'"prediction":"', f'"prediction":"{i} '.encode(), 1)
                )
                started = time.perf_counter()
                sub = submit(runtime, server.user, data, f"judged-{i}")
                status = server.wait(sub.id, ("complete", "failed"))
                if status != "complete":
                    raise SystemExit(f"submission {sub.id} {status}")
                latencies.append(time.perf_counter() - started)
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
