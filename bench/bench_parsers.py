"""Benchmark: every answer parser on hostile answers of growing length, and on typical ones.

Hostile answers are the shapes that made ``re`` backtrack for minutes (issue "Trust and clarity,
round 3"): long digit runs, digits and commas, long spaces, text without a colon, dotted digits.
For each parser and shape, the time at n and 4n characters is printed with their ratio: a linear
parser shows ~4 (quadratic would show 16, cubic 64). The typical part times the strong parser on
answers in the two commonest MedSG styles against Python's ``re`` on the same patterns (what
the exact linear matcher costs).

Usage: python bench/bench_parsers.py [--sizes 2000,8000,32000] [--runs 3]
"""

from __future__ import annotations

import argparse
import itertools
import re
import statistics
import time
from collections.abc import Callable

from medvidbench.benchmarks.medsg import scoring as medsg
from medvidbench.benchmarks.medvidbench.tasks import dvc, sa, stg, tal

PARSERS: dict[str, Callable[[str], object]] = {
    "medsg strong": medsg.parse_strong,
    "medsg old": lambda t: medsg.parse_old(t, 336, 336),
    "medsg corrected": medsg.parse_corrected,
    "tal v1": tal.parse,
    "tal v2": lambda t: tal.parse(t, strict=True),
    "dvc v1": dvc.parse,
    "dvc v2": lambda t: dvc.parse(t, strict=True),
    "stg v1": lambda t: stg.parse(t, ["1.0"]),
    "stg v2": lambda t: stg.parse(t, ["1.0"], strict=True),
    "sa v1": sa.parse,
    "sa v2": lambda t: sa.parse(t, strict=True),
}
SHAPES: dict[str, Callable[[int], str]] = {
    "digits": lambda n: "1" * n,
    "digits,commas": lambda n: "1," * (n // 2),
    "spaces": lambda n: "1" + " " * n + "x",
    "no colon": lambda n: "a" * n,
    "dotted": lambda n: "1." * (n // 2),
}


def timed(fn: Callable[[str], object], text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def typical(runs: int) -> None:
    """Answers in the two commonest MedSG styles: the linear matcher against re's."""
    answers = [
        f"<|box_start|>({x},{x + 7}),({x + 90},{x + 41})<|box_end|>" for x in range(100, 300)
    ] + [f"[{x}, {x + 3}, {x + 50}, {x + 60}]" for x in range(100, 300)]
    slow = timed(lambda _: [medsg.parse_strong(a) for a in answers], "", runs)
    pattern = re.compile(medsg._STRONG_PAIRS.pattern)
    four = re.compile(medsg._STRONG_FOUR.pattern)
    fast = timed(lambda _: [pattern.findall(a) or four.findall(a) for a in answers], "", runs)
    per = 1e6 / len(answers)
    print(
        f"typical MedSG answers: linear {slow * per:.0f} us, re {fast * per:.0f} us per answer "
        f"({slow / fast:.0f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,8000,32000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"seconds per answer (median of {args.runs}); ratio = time(4n) / time(n)")
    print(f"{'parser':16} {'shape':14} " + " ".join(f"{n:>9,}" for n in sizes) + "  ratios")
    for name, fn in PARSERS.items():
        for shape, make in SHAPES.items():
            times = [timed(fn, make(n), args.runs) for n in sizes]
            ratios = [b / a if a > 0 else float("nan") for a, b in itertools.pairwise(times)]
            print(
                f"{name:16} {shape:14} "
                + " ".join(f"{t:9.4f}" for t in times)
                + "  "
                + " ".join(f"{r:4.1f}" for r in ratios)
            )
    typical(args.runs)


if __name__ == "__main__":
    main()
