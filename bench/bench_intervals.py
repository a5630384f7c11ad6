"""Benchmark: do 95 % intervals keep their promise with few clusters (issue #26, item 6)?

Simulated test sets with a known truth: G clusters of 1-5 alike items (a cluster's success
probability drawn around 0.6, as questions about one video are alike), the metric the mean of the
0/1 outcomes. For each G, the share of test sets whose interval covers the truth, for the plain
percentile interval of the cluster bootstrap and for the interval the server publishes
(core/intervals.py: widened below 30 clusters, never a point). Also the time of one bootstrap.

Then two models on the same test sets, compared as the compare page compares them (paired
replicates of one seed, core/statistics.py ``paired``): with equal success probabilities, the
share of test sets in which they are called distinguishable (nominal 5 %), with and without the
few-cluster correction; and with the second model better by the median minimum detectable
difference reported in the first pass (the expected success rates that far apart), the share in
which the difference is found (the promise: 80 %).

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


def _shift_for(difference: float) -> float:
    """The shift of every cluster's success probability (kept within 0-1) that moves the
    expected success rate by ``difference``: near 1 a shift is clipped, so it must be larger."""
    rng = np.random.default_rng(0)
    effects = np.clip(0.6 + rng.normal(0, 0.2, size=400_000), 0.0, 1.0)
    low, high = 0.0, 1.0
    for _ in range(40):
        mid = (low + high) / 2
        if float(np.mean(np.clip(effects + mid, 0.0, 1.0) - effects)) < difference:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _paired_sets(
    clusters: int, sims: int, replicates: int, seed: int, shift: float
) -> tuple[float, float, float]:
    """(share called distinguishable uncorrected, corrected, median minimum detectable) over
    ``sims`` test sets where model B's success probability is A's plus ``shift``."""
    from medvidbench.core.scoring import SampleResult
    from medvidbench.core.statistics import Design, bootstrap, paired, sample_means

    rng = np.random.default_rng(seed)
    plain = corrected = 0
    detectable = []
    for _ in range(sims):
        sizes = rng.integers(1, 6, size=clusters)
        effects = np.clip(0.6 + rng.normal(0, 0.2, size=clusters), 0.0, 1.0)
        names = [f"c{c:03d}" for c in np.repeat(np.arange(clusters), sizes)]
        shared = int(rng.integers(1 << 30))  # one seed for both: paired replicates
        got, points = [], []
        for extra in (0.0, shift):
            p = np.clip(np.repeat(effects, sizes) + extra, 0.0, 1.0)
            y = rng.random(int(sizes.sum())) < p
            rows = [SampleResult(i, "d", True, {"m": float(v)}) for i, v in enumerate(y)]
            design = Design.build([sample_means(rows, ("m",))], names)
            got.append(bootstrap(design, ["m"], "sim", replicates, shared).values)
            points.append({"m": float(y.mean())})
        (d,) = paired(got[1], got[0], ["m"], points[1], points[0])
        (c,) = paired(got[1], got[0], ["m"], points[1], points[0], clusters={"m": clusters})
        plain += bool(d.distinguishable)
        corrected += bool(c.distinguishable)
        if c.detectable is not None:
            detectable.append(c.detectable)
    return plain / sims, corrected / sims, float(np.median(detectable))


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
    for g in args.clusters:
        plain, corrected, mdd = _paired_sets(g, args.sims, args.replicates, 7 + g, 0.0)
        shift = _shift_for(mdd)
        found = "cannot be made on this 0-1 scale"
        if shift < 0.999:  # the expected rate can move that far
            _, power, _ = _paired_sets(g, args.sims, args.replicates, 9 + g, shift)
            found = f"found in {power:.1%} (promised 80 %)"
        print(
            f"{g:>3} clusters, two equal models: distinguishable in {plain:.1%} uncorrected, "
            f"{corrected:.1%} as published (nominal 5 %); a true difference of the median "
            f"detectable difference ({mdd:.3f}) {found}"
        )


if __name__ == "__main__":
    main()
