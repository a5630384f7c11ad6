"""Benchmark: judging the caption samples of the synthetic 6,245-sample set (issue: judge).

Target: with 200 ms simulated latency, concurrency 32 and 10 % injected 429s, every caption
sample judged in under 30 s with none lost. The judge is the fake OpenAI-compatible server on
127.0.0.1 (a real HTTP server); the cache starts empty, then a second run shows the cache.

Usage: python bench/bench_judge.py [--latency 0.2] [--rate-429 0.1] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=6245)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--rate-429", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--archetype", default="strong")
    args = parser.parse_args()

    from medvidbench.evaluation import evaluate
    from medvidbench.groundtruth import load_ground_truth
    from medvidbench.judge.cache import SQLiteJudgeCache
    from medvidbench.judge.client import Judge, JudgeConfig
    from medvidbench.judge.fake_server import FakeJudgeServer
    from medvidbench.synth import write_synthetic

    with tempfile.TemporaryDirectory() as tmp:
        files = write_synthetic(tmp, samples=args.samples, seed=0, archetypes=(args.archetype,))
        gt = load_ground_truth(files["ground_truth"])
        captions = sum(
            1
            for s in gt.samples
            if s.task in ("dense_captioning", "video_summary", "region_caption")
        )
        with FakeJudgeServer(latency=args.latency, rate_429=args.rate_429, seed=1) as server:
            config = JudgeConfig(
                model="fake", base_url=server.url, api_key="k", concurrency=args.concurrency
            )
            cache_path = Path(tmp) / "cache.sqlite3"
            for run in ("empty cache", "warm cache"):
                judge = Judge(config, SQLiteJudgeCache(cache_path))
                started = time.perf_counter()
                report = evaluate(files[args.archetype], gt, judge=judge)
                wall = time.perf_counter() - started
                j = report.judge or {}
                lost = sum(
                    report.per_task[t].get("judge", report.per_task[t]).get("failed_pairs", 0)
                    for t in ("dense_captioning", "video_summary", "region_caption")
                )
                print(
                    f"{run}: {wall:.1f} s for {captions:,} caption samples "
                    f"({j.get('pairs', 0):,} distinct pairs); calls {j.get('calls', 0):,}, "
                    f"429s {j.get('rate_limited', 0):,}, retries {j.get('retries', 0):,}, "
                    f"cache hits {j.get('cache_hits', 0):,}, failed pairs {lost}; "
                    f"DVC_llm {report.metrics['dvc_llm']:.3f} VS_llm "
                    f"{report.metrics['vs_llm']:.3f} RC_llm {report.metrics['rc_llm']:.3f}"
                )
            print(f"server: {server.requests:,} requests, injected {server.injected}")


if __name__ == "__main__":
    main()
