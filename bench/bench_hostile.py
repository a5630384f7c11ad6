"""Benchmark: what a file of hostile answers costs a scoring worker (issue #32 item 7).

The attack: every answer of a full-size MedVidBench file replaced by thousands of random digits
(6,245 answers of 8,000 digits: 51 MB, inside every upload limit). Scored on a worker thread,
as the server scores it (no ``re``-first budget there), with each task's answer cap (the
default) and without (the caps turned off), and then under the scoring job's CPU budget: the
figures are the CPU seconds and where they went, and whether the budget stopped the job.

Usage: python bench/bench_hostile.py [--samples 6245] [--length 8000] [--budget 120]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from medvidbench import benchmarks
from medvidbench.core import cpu_budget
from medvidbench.core.cpu_budget import CpuBudgetError
from medvidbench.core.evaluation import evaluate


def _on_a_thread(work: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def run() -> None:
        began = time.thread_time()
        try:
            out["report"] = work()
        except CpuBudgetError as exc:
            out["stopped"] = exc.message
        out["cpu"] = time.thread_time() - began

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=6245)
    parser.add_argument("--length", type=int, default=8000)
    parser.add_argument("--budget", type=float, default=120.0)
    args = parser.parse_args()
    bench = benchmarks.get("medvidbench")
    assert bench.demo is not None
    folder = Path(tempfile.mkdtemp(prefix="mvb-hostile-"))
    files = bench.demo.synthesise(folder, args.samples, 0)
    records = json.loads(files["strong"].read_text())
    rng = random.Random(0)
    for r in records:
        r["prediction"] = "".join(rng.choice("0123456789") for _ in range(args.length))
    hostile = folder / "hostile.json"
    hostile.write_text(json.dumps(records))
    gt = bench.load_ground_truth(files["ground_truth"])
    size = hostile.stat().st_size / 1e6
    print(f"{len(records):,} answers of {args.length:,} digits ({size:.1f} MB), on a thread")
    uncapped = dataclasses.replace(
        bench, tasks=tuple(dataclasses.replace(t, answer_chars=None) for t in bench.tasks)
    )
    for label, definition in (("capped (default)", bench), ("caps off", uncapped)):
        done = _on_a_thread(lambda d=definition: evaluate(d, hostile, gt))
        timings = done["report"].timings
        parts = ", ".join(f"{k} {v:.1f}" for k, v in timings.items() if v >= 0.05)
        print(f"  {label:<17} {done['cpu']:7.1f} s CPU  ({parts})")
    budgeted = _on_a_thread(lambda: _limited(args.budget, lambda: evaluate(bench, hostile, gt)))
    verdict = "stopped" if "stopped" in budgeted else "finished"
    print(f"  under a {args.budget:g} s budget: {verdict} after {budgeted['cpu']:.1f} s CPU")


def _limited(seconds: float, work: Any) -> Any:
    with cpu_budget.limited(seconds, "the hostile file's scoring"):
        return work()


if __name__ == "__main__":
    main()
