"""Benchmark: scoring 9,630 MedSG-Bench answers (the test set's size) after loading.

Answers are drawn from the styles real models write (box tokens, bracketed lists, Qwen2.5-VL
JSON with one or several boxes, 0-1000 and 0-1 scaled lists, truncated outputs, prose), with
boxes on 336x336 images. Timed: parsing, IoU and the per-task counters for all items, under the
official strong parser, the official old parser and the corrected profile; median of 7 runs.

Target (issue: MedSG-Bench): all 9,630 items in under 0.3 s.

Usage: python bench/bench_medsg.py [--items 9630] [--runs 7]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from medvidbench.benchmarks.medsg.scoring import (
    TaskTotals,
    score_corrected,
    score_official,
)
from medvidbench.benchmarks.medsg.testset import TASKS


def answer(rng: random.Random, box: list[int]) -> str:
    x1, y1, x2, y2 = (v + rng.randint(-15, 15) for v in box)
    style = rng.randrange(8)
    if style == 0:
        return f"<|box_start|>({x1},{y1}),({x2},{y2})<|box_end|>"
    if style == 1:
        return f"[{x1}, {y1}, {x2}, {y2}]"
    if style == 2:
        return f'```json\n[\n\t{{"bbox_2d": [{x1}, {y1}, {x2}, {y2}], "label": "Spleen"}}\n]\n```'
    if style == 3:
        first, second = f"[{x1}, {y1}, {x2}, {y2}]", f"[{y1}, {x1}, {y2}, {x2}]"
        return f'```json\n[\n\t{{"bbox_2d": {first}}},\n\t{{"bbox_2d": {second}}}\n]\n```'
    if style == 4:
        return "[" + ", ".join(str(round(v / 336 * 1000)) for v in (x1, y1, x2, y2)) + "]"
    if style == 5:
        return f"[{x1 / 336:.2f}, {y1 / 336:.2f}, {x2 / 336:.2f}, {y2 / 336:.2f}]"
    if style == 6:
        return f"[{x1}, {y1}, {x2},"
    return "The structure is in the upper left part of the second image."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=9630)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(0)
    items = []
    for i in range(args.items):
        x1, y1 = rng.randint(0, 250), rng.randint(0, 250)
        box = [x1, y1, x1 + rng.randint(10, 85), y1 + rng.randint(10, 85)]
        items.append((TASKS[i % len(TASKS)], box, answer(rng, box)))

    def run(score: object) -> float:
        started = time.perf_counter()
        totals: dict[str, TaskTotals] = {}
        for task, gt, text in items:
            totals.setdefault(task, TaskTotals()).add(score(text, gt))  # type: ignore[operator]
        for task, t in totals.items():
            t.metrics(task)
        return time.perf_counter() - started

    rules = {
        "official, strong parser": lambda text, gt: score_official(text, gt),
        "official, old parser": lambda text, gt: score_official(text, gt, "old"),
        "corrected, pixel": lambda text, gt: score_corrected(text, gt),
    }
    print(f"{args.items:,} items, median of {args.runs} runs")
    for name, score in rules.items():
        times = [run(score) for _ in range(args.runs)]
        print(f"{name:<26} {statistics.median(times):.3f} s  (target < 0.3 s)")


if __name__ == "__main__":
    main()
