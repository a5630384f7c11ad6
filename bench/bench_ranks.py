"""Benchmark: do the board's rank brackets keep their promise (issue #35 items 1 and 2)?

Simulated boards with a known truth, ranked as a board ranks them (``core/standings.py``: ranks
and brackets from one paired bootstrap of the test items, every pair of models tested at once).
Test sets of G clusters of 1 + Poisson(2) items; each cluster has a shared effect on the logit
scale (some videos are harder for everyone); each model's items are right with its own
probability shifted by that effect. The metric is accuracy; the true rank of a model is 1 + the
number of models with a higher true accuracy.

Printed, per kind of board: the share of boards on which every model's bracket holds its true
rank (the promise: 95 %), the share of brackets that do, the brackets' mean width, and how often
the true best model is given rank 1 (a gold medal). Then two equally good models on few
clusters: the share of test sets in which they are given different ranks (nominal 5 %).

The replicates are the server's: 1,000 stored per evaluation, of which a board ranks with the
first 200, or all of them below 30 clusters.

Usage: python bench/bench_ranks.py [--boards 400] [--replicates 1000]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

NEAR_TIES = tuple(np.linspace(0.602, 0.620, 10))  # issue #35's board
SPREAD = tuple(np.linspace(0.45, 0.85, 10))


def _test_set(clusters: int, rng: Any) -> tuple[np.ndarray, np.ndarray]:
    """Item -> cluster, and each cluster's effect (logit scale)."""
    sizes = 1 + rng.poisson(2, size=clusters)
    return np.repeat(np.arange(clusters), sizes), rng.normal(0, 0.6, size=clusters)


def _true_accuracy(p: float) -> float:
    """Expected accuracy of a model with base probability p under the cluster effects."""
    z = np.random.default_rng(0).normal(0, 0.6, 200_000)
    logit = np.log(p / (1 - p)) + z
    return float(np.mean(1 / (1 + np.exp(-logit))))


def board(
    skills: tuple[float, ...], clusters: int, replicates: int, rng: Any
) -> tuple[np.ndarray, np.ndarray]:
    """One simulated board: its Standings' bounds (models x 2) and ranks, from as many of
    ``replicates`` as a server ranks with (all of them below 30 clusters)."""
    from medvidbench.core.benchmark import Metric
    from medvidbench.core.standings import Standings, positions_of, rank_replicates
    from medvidbench.core.statistics import cluster_counts

    replicates = rank_replicates(replicates, clusters)
    item_cluster, effect = _test_set(clusters, rng)
    values = np.empty((len(skills), replicates + 1, 1))
    counts = cluster_counts(clusters, replicates, int(rng.integers(1 << 30)))
    sizes = np.bincount(item_cluster, minlength=clusters).astype(np.float64)
    for n, p in enumerate(skills):
        logit = np.log(p / (1 - p)) + effect[item_cluster]
        right = (rng.random(len(item_cluster)) < 1 / (1 + np.exp(-logit))).astype(np.float64)
        per_cluster = np.bincount(item_cluster, weights=right, minlength=clusters)
        values[n, 0, 0] = right.mean()
        values[n, 1:, 0] = (counts @ per_cluster) / (counts @ sizes)
    positions = positions_of(values[:, 1:], [Metric("acc", "Acc", "t", "x")])
    order = list(np.argsort(-values[:, 0, 0], kind="stable"))
    found = Standings.of(positions, order, clusters=clusters)
    return found.bounds, found.ranks


def brackets(
    skills: tuple[float, ...], clusters: int, boards: int, replicates: int, seed: int
) -> dict[str, float]:
    truth = np.array([_true_accuracy(p) for p in skills])
    true_rank = 1 + (truth[None, :] > truth[:, None]).sum(axis=1)
    rng = np.random.default_rng(seed)
    joint = held = width = gold = 0.0
    for _ in range(boards):
        bounds, ranks = board(skills, clusters, replicates, rng)
        inside = (bounds[:, 0] <= true_rank) & (true_rank <= bounds[:, 1])
        joint += inside.all()
        held += inside.mean()
        width += float((bounds[:, 1] - bounds[:, 0] + 1).mean())
        gold += ranks[int(np.argmax(truth))] == 1
    return {
        "joint": joint / boards,
        "each": held / boards,
        "width": width / boards,
        "gold": gold / boards,
    }


def split_ranks(clusters: int, boards: int, replicates: int, seed: int) -> float:
    """The share of test sets in which two equally good models get different ranks."""
    rng = np.random.default_rng(seed)
    split = 0
    for _ in range(boards):
        _, ranks = board((0.6, 0.6), clusters, replicates, rng)
        split += ranks[0] != ranks[1]
    return split / boards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", type=int, default=400)
    parser.add_argument("--replicates", type=int, default=1000, help="stored per evaluation")
    args = parser.parse_args()
    for name, skills in (("near ties (0.602-0.620)", NEAR_TIES), ("spread (0.45-0.85)", SPREAD)):
        began = time.perf_counter()
        got = brackets(skills, 300, args.boards, args.replicates, 11)
        print(
            f"10 models, {name}, 300 clusters, {args.boards} boards: every bracket holds its "
            f"true rank on {got['joint']:.1%} of boards (promise 95 %), each bracket "
            f"{got['each']:.1%}; mean width {got['width']:.2f} places; the best model ranked 1 "
            f"on {got['gold']:.1%} ({time.perf_counter() - began:.0f} s)"
        )
    for g in (8, 15, 40):
        share = split_ranks(g, args.boards * 2, args.replicates, 5 + g)
        print(f"two equal models, {g} clusters: different ranks in {share:.1%} (nominal 5 %)")


if __name__ == "__main__":
    main()
