"""Benchmark: judging caption answers as a researcher runs it (issue: speed, item 5).

A fake OpenAI-compatible judge runs in its own process (``python -m
medvidbench.core.judge.fake_server``: it shares no interpreter lock with the client measured), with
200 ms latency. ``medvidbench evaluate PRED --ground-truth GT --judge openai`` runs as a user
types it, at the default concurrency unless ``--concurrency`` is given, on a synthetic set
whose caption tasks hold about 900 samples (``--samples 2390``). Printed per run: wall time,
when the first request reached the judge (after the command started, and after the evaluation
itself started, past loading and matching the files), calls,
429s, the configured and the effective concurrency (requests in flight on average, from the
report's provenance), and failed pairs. Then the identical command again: it must make no
request. Then the same with 10 % injected 429s.

Targets: first request within 0.5 s of the start of judging; effective concurrency at least 90 %
of the configured one; at least 24 at the default, and at least 16 with 10 % 429s.

``--busy N`` runs N processes spinning on a core each throughout (a shared machine under
load, as issue #36 measured it: 76 % effective concurrency at load 8-23).

Usage: python bench/bench_judge.py [--samples 2390] [--latency 0.2] [--concurrency N] [--busy N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx


def run(args: argparse.Namespace, folder: Path, rate_429: float) -> None:
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "medvidbench.core.judge.fake_server",
            "--latency",
            str(args.latency),
            "--rate-429",
            str(rate_429),
            "--seed",
            "1",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = (server.stdout.readline() if server.stdout else "").strip()
        from serving import clean_env  # beside this script

        env = clean_env(OPENAI_BASE_URL=url, OPENAI_API_KEY="k", MEDVIDBENCH_JUDGE_MODEL="fake")
        if args.concurrency:
            env["MEDVIDBENCH_JUDGE_CONCURRENCY"] = str(args.concurrency)
        cache = folder / f"cache-{rate_429}.sqlite3"
        for attempt in ("empty cache", "same command again"):
            report_path = folder / "report.json"
            started_at, started = time.time(), time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "medvidbench",
                    "evaluate",
                    str(folder / "predictions_strong.json"),
                    "--ground-truth",
                    str(folder / "ground_truth.json"),
                    "--judge",
                    "openai",
                    "--judge-cache",
                    str(cache),
                    "--out",
                    str(report_path),
                ],
                env=env,
                check=True,
                capture_output=True,
            )
            wall = time.perf_counter() - started
            report = json.loads(report_path.read_text())
            j = report["judge"]
            stats = httpx.get(url.removesuffix("/v1") + "/v1/stats").json()
            first = stats["first_request_at"]
            lost = sum(
                report["per_task"][t].get("judge", report["per_task"][t]).get("failed_pairs", 0)
                for t in ("dense_captioning", "video_summary", "region_caption")
            )
            since_eval = report["timings"].get("judge_first_request")
            first_text = "-"
            if first is not None and since_eval is not None and attempt == "empty cache":
                first_text = (
                    f"{first - started_at:.2f} s after the command started, "
                    f"{since_eval:.2f} s after the evaluation did"
                )
            print(
                f"  {attempt}: {wall:.1f} s; first request {first_text}; calls "
                f"{j['calls']:,} ({j['pairs']:,} pairs, {j['cache_hits']:,} cached), 429s "
                f"{j['rate_limited']:,}; concurrency {j['concurrency']}, effective "
                f"{j['effective_concurrency']}; failed pairs {lost}"
            )
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2390)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=0, help="0: the default setting")
    parser.add_argument("--busy", type=int, default=0, help="processes spinning meanwhile")
    args = parser.parse_args()
    from serving import busy_loops, synth  # beside this script

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        synth(folder, args.samples)
        records = json.loads((folder / "ground_truth.json").read_text())
        captions = sum(
            r["qa_type"].startswith(("dense_captioning", "video_summary", "region_caption"))
            for r in records
        )
        print(
            f"{captions:,} caption samples of {len(records):,}; judge latency {args.latency} s; "
            f"{args.busy} busy loops"
        )
        with busy_loops(args.busy):
            for rate in (0.0, 0.1):
                print(f"injected 429s: {rate:.0%}")
                run(args, folder, rate)


if __name__ == "__main__":
    main()
