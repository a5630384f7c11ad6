"""Benchmark: loading and matching submissions (issue: foundation).

Targets: a 6,245-sample submission loads and matches in well under a second; a 531,850-sample
one in under 20 s and 2 GB of memory. Each size runs in a fresh child process so that its peak
resident memory is its own (ground truth and one submission held together, as a run holds
them). Prints medians of repeated runs.

Usage: python bench/bench_formats.py [--sizes 6245,531850] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def peak_rss_mib() -> float:
    """This process's peak resident memory.

    Not ``getrusage``: Linux carries ru_maxrss across execve, so a child forked from a parent
    that had just generated half a million records would report the parent's peak. VmHWM
    belongs to the new process image only.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(gt_path: str, pred_path: str, repeat: int) -> None:
    from medvidbench.benchmarks.medvidbench.groundtruth import load_ground_truth
    from medvidbench.benchmarks.medvidbench.matching import load_submission

    t0 = time.perf_counter()
    gt = load_ground_truth(gt_path)
    gt_load = time.perf_counter() - t0
    runs = []
    peak_mib = 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = load_submission(pred_path, gt)
        runs.append(time.perf_counter() - t0)
        assert result.report.matched == len(gt)
        # Peak of one ground truth plus one submission, as a server or CLI run holds them.
        peak_mib = peak_mib or peak_rss_mib()
        del result
    print(
        json.dumps(
            {
                "samples": len(gt),
                "gt_load_s": gt_load,
                "match_runs_s": runs,
                "peak_rss_mib": peak_mib,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="6245,531850")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return
    from medvidbench.benchmarks.medvidbench.synth import write_synthetic

    print(
        f"{'samples':>8} {'file MB':>8} {'GT load s':>10} {'load+match s (median)':>22} "
        f"{'min':>7} {'max':>7} {'peak RSS MiB':>13}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            files = write_synthetic(tmp, samples=size, seed=0, archetypes=("shuffled",))
            repeat = args.repeat if size < 100_000 else max(1, args.repeat // 2)
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    str(files["ground_truth"]),
                    str(files["shuffled"]),
                    str(repeat),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout)
            runs = r["match_runs_s"]
            mb = Path(files["shuffled"]).stat().st_size / 1e6
            print(
                f"{r['samples']:>8} {mb:>8.1f} {r['gt_load_s']:>10.3f} "
                f"{statistics.median(runs):>22.3f} {min(runs):>7.3f} {max(runs):>7.3f} "
                f"{r['peak_rss_mib']:>13.0f}"
            )


if __name__ == "__main__":
    main()
