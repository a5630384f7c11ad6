"""The optimal one-to-one assignment used by strict-v2 TAL and DVC_llm, at every size."""

from __future__ import annotations

import itertools
import random

import pytest

from medvidbench.benchmarks.medvidbench.tasks.tal import assign


def brute_force(table: list[list[float]]) -> float:
    """The best total of positive entries over every one-to-one assignment."""
    n, m = len(table), len(table[0])
    best = 0.0
    if n <= m:
        for cols in itertools.permutations(range(m), n):
            best = max(best, sum(max(table[i][j], 0.0) for i, j in enumerate(cols)))
    else:
        for rows in itertools.permutations(range(n), m):
            best = max(best, sum(max(table[i][j], 0.0) for j, i in enumerate(rows)))
    return best


def total(table: list[list[float]], pairs: list[tuple[int, int]]) -> float:
    assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})
    assert all(table[i][j] > 0 for i, j in pairs)
    return sum(table[i][j] for i, j in pairs)


@pytest.mark.parametrize("seed", range(60))
def test_matches_brute_force_on_small_tables(seed: int) -> None:
    rng = random.Random(seed)
    n, m = rng.randint(1, 6), rng.randint(1, 6)
    # Many zeros, as IoU tables gated at a threshold have.
    table = [[rng.choice([0.0, 0.0, round(rng.random(), 3)]) for _ in range(m)] for _ in range(n)]
    assert total(table, assign(table)) == pytest.approx(brute_force(table))


def test_large_table_is_optimal_where_greedy_is_not() -> None:
    # Ten 2x2 blocks [[0.6, 0.5], [0.5, 0]] on the diagonal of a 20x20 table: a greedy choice
    # takes 0.6 in each block (total 6.0); the optimum takes both 0.5s (total 10.0).
    table = [[0.0] * 20 for _ in range(20)]
    for b in range(0, 20, 2):
        table[b][b], table[b][b + 1], table[b + 1][b] = 0.6, 0.5, 0.5
    pairs = assign(table)
    assert total(table, pairs) == pytest.approx(10.0)
    assert len(pairs) == 20


def test_thirteen_by_thirteen_beyond_the_old_exact_limit() -> None:
    rng = random.Random(13)
    table = [
        [round(rng.random(), 2) if rng.random() < 0.4 else 0.0 for _ in range(13)]
        for _ in range(13)
    ]
    # Check against brute force restricted to the nonzero structure: split into the rows'
    # optimum computed by a second, independent exact method (DP over column subsets).
    best: dict[int, float] = {0: 0.0}
    for row in table:
        nxt = dict(best)
        for mask, value in best.items():
            for j, v in enumerate(row):
                if v > 0 and not mask >> j & 1:
                    key = mask | 1 << j
                    nxt[key] = max(nxt.get(key, 0.0), value + v)
        best = nxt
    assert total(table, assign(table)) == pytest.approx(max(best.values()))


def test_empty_and_all_zero_tables_have_no_pairs() -> None:
    assert assign([]) == [] and assign([[]]) == []
    assert assign([[0.0, 0.0], [0.0, 0.0]]) == []
