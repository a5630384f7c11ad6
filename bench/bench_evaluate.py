"""Benchmark: the rule-based evaluator (issue: evaluator).

Targets: the whole 6,245-sample evaluation (all rule-based tasks, NAP embeddings included,
excluding the one-time model load) under 1 s; model load under 3 s; 531,850 samples under 60 s
and 4 GB. Prints medians of repeated runs; each large run is a fresh child process so its peak
memory (VmHWM) is its own.

Usage: python bench/bench_evaluate.py [--repeat 5] [--samples 6245] [--large 531850]
       [--profile leaderboard-v1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARCHETYPES = ("perfect", "strong", "weak", "format-noisy", "garbage", "shuffled")


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(gt_path: str, pred_path: str, profile: str) -> None:
    from medvidbench.benchmarks.medvidbench.groundtruth import load_ground_truth
    from medvidbench.benchmarks.medvidbench.matching import load_submission
    from medvidbench.core.embeddings import default_embedder
    from medvidbench.library import evaluate

    default_embedder()
    t0 = time.perf_counter()
    gt = load_ground_truth(gt_path)
    t1 = time.perf_counter()
    matched = load_submission(pred_path, gt)
    t2 = time.perf_counter()
    report = evaluate(matched, gt, profile=profile)
    t3 = time.perf_counter()
    print(
        json.dumps(
            {
                "samples": len(gt),
                "gt_load": t1 - t0,
                "match": t2 - t1,
                "score": t3 - t2,
                "total": t3 - t0,
                "peak_mib": peak_rss_mib(),
                "tag_miou_03": report.metrics["tag_miou_03"],
            }
        )
    )


def small(repeat: int, profile: str, samples: int) -> None:
    from medvidbench.benchmarks.medvidbench.groundtruth import load_ground_truth
    from medvidbench.benchmarks.medvidbench.matching import load_submission
    from medvidbench.benchmarks.medvidbench.synth import write_synthetic
    from medvidbench.benchmarks.medvidbench.tasks.nap import known_labels, prepared_embedder
    from medvidbench.core.embeddings import Embedder
    from medvidbench.core.scoring import Context
    from medvidbench.library import evaluate

    labels = known_labels()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["MEDVIDBENCH_CACHE_DIR"] = cache  # starts empty, as on a new machine
        for label in ("empty model cache (a new machine)", "model cache present"):
            loads = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                Embedder().encode_fixed(labels)
                loads.append(time.perf_counter() - t0)
                if label.startswith("empty"):
                    for entry in Path(cache).iterdir():
                        entry.unlink()
            print(
                f"model load with the {len(labels)} NAP class labels embedded, {label}: "
                f"median {statistics.median(loads):.3f} s over {repeat} "
                f"(min {min(loads):.3f}, max {max(loads):.3f})"
            )
    with tempfile.TemporaryDirectory() as tmp:
        files = write_synthetic(tmp, samples=samples, seed=0, archetypes=ARCHETYPES)
        gt = load_ground_truth(files["ground_truth"])
        print(
            f"\n{samples:,} samples, profile {profile}; seconds per evaluation (match + score "
            "every rule-based task, NAP embeddings included).\n'cold': each run gets a freshly "
            "loaded embedder that knows only the class labels (every answer embedding is "
            "included); 'warm': the cache a long-running server has."
        )
        print(f"{'archetype':>13} {'cold median':>12} {'min':>7} {'max':>7} {'warm median':>12}")
        for name in ARCHETYPES:
            cold, warm = [], []
            shared = Context(embedder_factory=prepared_embedder)
            for _ in range(repeat):
                fresh = Embedder()
                fresh.encode_fixed(labels)  # part of the one-time load, as in a server process
                ctx = Context(embedder_factory=lambda e=fresh: e)
                t0 = time.perf_counter()
                evaluate(load_submission(files[name], gt), gt, profile=profile, ctx=ctx)
                cold.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                evaluate(load_submission(files[name], gt), gt, profile=profile, ctx=shared)
                warm.append(time.perf_counter() - t0)
            print(
                f"{name:>13} {statistics.median(cold):>12.3f} {min(cold):>7.3f} "
                f"{max(cold):>7.3f} {statistics.median(warm[1:] or warm):>12.3f}"
            )


def large(samples: int, profile: str) -> None:
    from medvidbench.benchmarks.medvidbench.synth import write_synthetic

    with tempfile.TemporaryDirectory() as tmp:
        files = write_synthetic(tmp, samples=samples, seed=0, archetypes=("strong",))
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                str(files["ground_truth"]),
                str(files["strong"]),
                profile,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    r = json.loads(out.stdout)
    print(
        f"\n{r['samples']:,} samples (strong), profile {profile}, one run in a fresh process: "
        f"ground truth {r['gt_load']:.1f} s + match {r['match']:.1f} s + score "
        f"{r['score']:.1f} s = {r['total']:.1f} s; peak memory {r['peak_mib']:,.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--large", type=int, default=531_850, help="0 to skip")
    parser.add_argument("--samples", type=int, default=6245)
    parser.add_argument("--profile", default="leaderboard-v1")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    small(args.repeat, args.profile, args.samples)
    if args.large:
        large(args.large, args.profile)


if __name__ == "__main__":
    main()
