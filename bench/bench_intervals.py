"""Benchmark: do 95 % intervals keep their promise with few clusters (issue #26, item 6)?

Simulated test sets with a known truth: G clusters of 1-5 alike items (a cluster's success
probability drawn around 0.6, as questions about one video are alike), the metric the mean of the
0/1 outcomes. For each G, the share of test sets whose interval covers the truth, for the plain
percentile interval of the cluster bootstrap and for the interval the server publishes
(core/intervals.py: widened below 30 clusters, never a point). Also the time of one bootstrap.

Usage: python bench/bench_intervals.py [--sims 2000] [--replicates 400] [--clusters 4 8 15 40]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def coverage(clusters: int, sims: int, replicates: int, seed: int) -> tuple[float, float, float]:
    from medvidbench.core.intervals import interval
    from medvidbench.core.scoring import SampleResult
    from medvidbench.core.statistics import Design, bootstrap, sample_means

    rng = np.random.default_rng(seed)
    truth = float(np.mean(np.clip(0.6 + rng.normal(0, 0.2, size=2_000_000), 0.0, 1.0)))
    plain = published = 0
    took = 0.0
    for _ in range(sims):
        sizes = rng.integers(1, 6, size=clusters)
        effects = np.clip(0.6 + rng.normal(0, 0.2, size=clusters), 0.0, 1.0)
        outcomes = rng.random(int(sizes.sum())) < np.repeat(effects, sizes)
        rows = [SampleResult(i, "d", True, {"m": float(y)}) for i, y in enumerate(outcomes)]
        names = [f"c{c:03d}" for c in np.repeat(np.arange(clusters), sizes)]
        design = Design.build([sample_means(rows, ("m",))], names)
        started = time.perf_counter()
        got = bootstrap(
            design, ["m"], "sim", replicates, int(rng.integers(1 << 30)), bounds={"m": (0.0, 1.0)}
        )
        took += time.perf_counter() - started
        lo, hi = interval(got.values[:, 0]) or (np.nan, np.nan)
        plain += lo <= truth <= hi
        lo, hi = got.intervals["m"] or (np.nan, np.nan)
        published += lo <= truth <= hi
    return plain / sims, published / sims, took / sims


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--clusters", type=int, nargs="+", default=[4, 8, 15, 40])
    args = parser.parse_args()
    for g in args.clusters:
        plain, published, took = coverage(g, args.sims, args.replicates, 2026 + g)
        se = (0.95 * 0.05 / args.sims) ** 0.5
        print(
            f"{g:>3} clusters, {args.sims} test sets: percentile {plain:.1%}, published "
            f"{published:.1%} (nominal 95 %, simulation s.e. {se:.1%}); one bootstrap "
            f"{took * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
