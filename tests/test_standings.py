"""Ranks as Chatbot Arena defines them, from paired replicates: a noisy model does not bridge two
that are always ordered, identical models share a rank, a rank is always inside its interval,
and the pair counting equals a brute-force count over every pair."""

from __future__ import annotations

import numpy as np
import pytest

from medvidbench.core.benchmark import Metric
from medvidbench.core.standings import Standings, positions_of, significance

ONE = [Metric("a", "A", "t", "a")]


def _board(means: list[float], noise: list[float], reps: int = 400, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = (
        np.array(means)[:, None, None]
        + rng.normal(0, 1, size=(len(means), reps, 1)) * (np.array(noise)[:, None, None])
    )
    return values  # entries x replicates x metrics


def test_a_noisy_model_does_not_bridge_two_that_are_always_ordered() -> None:
    """A is ahead of B in every replicate; C is noisy and sits between them: A and B are in
    different groups however wide C's interval is, and C shares A's rank."""
    values = _board([0.80, 0.79, 0.70], [0.0, 0.15, 0.0])  # A, C, B
    positions = positions_of(values, ONE)
    assert (positions[0] < positions[2]).all()  # A beats B in 100 % of replicates
    got = Standings.of(positions, [0, 1, 2])
    assert got.ranks.tolist() == [1, 1, 2]
    assert got.groups == [1, 1, 2]
    assert got.bounds.tolist() == [[1, 2], [1, 3], [2, 3]]


def test_three_identical_entries_share_a_rank_and_an_interval() -> None:
    values = _board([0.9, 0.6, 0.6, 0.6, 0.3], [0.01] * 5)
    values[2] = values[3] = values[1]  # identical in every replicate
    got = Standings.of(positions_of(values, ONE), [0, 1, 2, 3, 4])
    assert got.ranks.tolist() == [1, 2, 2, 2, 5]
    assert got.bounds.tolist() == [[1, 1], [2, 4], [2, 4], [2, 4], [5, 5]]
    assert got.groups == [1, 2, 2, 2, 3]


def test_fixed_values_rank_as_the_published_rule_with_ties_shared() -> None:
    """A board without replicates (one fixed replicate): ranks are competition ranks."""
    values = np.array([0.5, 0.7, 0.5, 0.1])[:, None, None]
    got = Standings.of(positions_of(values, ONE), [1, 0, 2, 3])
    assert got.ranks.tolist() == [2, 1, 2, 4]


def _brute_force(positions: np.ndarray, confidence: float = 0.95) -> np.ndarray:
    """The simultaneous test, written out pair by pair: every pair whose ranges meet, the
    better on average first; each replicate's smallest lower and upper tail counts; the
    allowance; each pair decided by it."""
    n, reps = positions.shape
    p = positions.astype(np.int64)
    low, high = p.min(axis=1), p.max(axis=1)
    rank = np.argsort(np.argsort(p.mean(axis=1), kind="stable"))  # place by mean position
    meet = [
        (i, j) if rank[i] < rank[j] else (j, i)
        for i in range(n)
        for j in range(i + 1, n)
        if not (high[i] < low[j] or high[j] < low[i])
    ]
    lowest, highest = np.full(reps, reps), np.full(reps, reps)
    for i, j in meet:
        d = p[j] - p[i]  # > 0 where i is ahead
        lowest = np.minimum(lowest, [(d <= v).sum() for v in d])
        highest = np.minimum(highest, [(d >= v).sum() for v in d])
    per_side = int(0.025 * reps + 1e-9)
    tau = min(sorted(lowest)[per_side], sorted(highest)[per_side]) - 1
    need = reps - min(max(tau, 0), (reps - 1) // 2)
    ahead = high[:, None] < low[None, :]
    for i, j in meet:
        d = p[j] - p[i]
        ahead[i, j], ahead[j, i] = (d > 0).sum() >= need, (d < 0).sum() >= need
    return ahead


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_banded_test_equals_a_pair_by_pair_one_and_ranks_stay_inside(seed: int) -> None:
    rng = np.random.default_rng(seed)
    entries, reps = 60, 200
    metrics = [Metric(k, k, "t", k) for k in "abc"]
    means = rng.random((entries, 1, 3))
    values = means + rng.normal(0, 0.03, size=(entries, reps, 3))
    values[5] = values[6]  # identical pair
    values[7, :, 1] = np.nan  # a missing metric
    values[8:12] = means[8:12]  # fixed rows (reported numbers)
    positions = positions_of(values, metrics)
    ahead, need = significance(positions)
    assert (ahead == _brute_force(positions)).all()
    assert need > 195  # many pairs tested at once: stricter than one pair's 97.5 %
    got = Standings.of(positions, list(np.argsort(positions.mean(axis=1), kind="stable")))
    assert ((got.bounds[:, 0] <= got.ranks) & (got.ranks <= got.bounds[:, 1])).all()
    assert got.ranks[5] == got.ranks[6]
