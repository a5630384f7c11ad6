"""A board re-ranked after a few entries join, leave or are rescored is ranked from what the
last ranking left (core/standings.rank_sums_changed, services/boards._rank_sums), and the result
is exactly that of ranking it from scratch: random boards, random changes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from medvidbench.core.benchmark import Metric
from medvidbench.core.standings import (
    MISSING_CODE,
    positions_of_codes,
    rank_sums,
    rank_sums_changed,
    significance,
)
from medvidbench.server.services.board_reads import Replicates
from medvidbench.server.services.boards import _standings

METRICS = [
    Metric("a", "A", "t", "a"),
    Metric("b", "B", "t", "b", higher_is_better=False),
    Metric("c", "C", "t", "c", "1-5"),
    Metric("d", "D", "t", "d", ranked=False),
]
DEFINITION = SimpleNamespace(metrics=METRICS, metric_keys=[m.key for m in METRICS])
STAMP = (40, 0, 300)  # replicates, seed, clusters


def _codes(rng: np.random.Generator, entries: int, reps: int, metrics: int = 3) -> np.ndarray:
    """Codes with ties (few distinct values) and missing values."""
    codes = rng.integers(-30, 30, size=(metrics, entries, reps))
    codes[rng.random((metrics, entries, reps)) < 0.1] = MISSING_CODE
    return codes


@pytest.mark.parametrize("seed", range(6))
def test_rank_sums_changed_equals_rank_sums(seed: int) -> None:
    rng = np.random.default_rng(seed)
    before = _codes(rng, int(rng.integers(2, 40)), 25)
    keep = [i for i in range(before.shape[1]) if rng.random() > 0.1]
    gone = [before[:, i] for i in range(before.shape[1]) if i not in keep]
    joining = _codes(rng, int(rng.integers(0, 4)), 25)
    after = np.concatenate([before[:, keep], joining], axis=1)
    sums = np.concatenate([rank_sums(before)[keep], np.zeros((joining.shape[1], 25), int)])
    added = list(range(len(keep), after.shape[1]))
    changed = rank_sums_changed(sums, after, gone, added)
    assert (changed == rank_sums(after)).all()


@pytest.mark.parametrize("seed", range(4))
def test_rank_sums_decide_pairs_as_positions_do(seed: int) -> None:
    codes = _codes(np.random.default_rng(seed), 60, 40)
    by_sums, need = significance(rank_sums(codes))
    by_positions, same = significance(positions_of_codes(codes))
    assert (by_sums == by_positions).all() and need == same


def _entry(rng: np.random.Generator, fixed: bool) -> tuple[Any, dict[str, float | None], bool]:
    metrics: dict[str, float | None] = {
        "a": round(float(rng.random()), 2),
        "b": None if rng.random() < 0.2 else round(float(rng.random()), 2),
        "c": float(rng.integers(1, 6)),
        "d": float(rng.random()),
    }
    if fixed:
        return None, metrics, True
    codes = np.ascontiguousarray(_codes(rng, 1, 40)[:, 0])
    if rng.random() < 0.05:  # beyond what 16-bit codes hold: the board is ranked afresh
        codes[0, 0] = 40_000
    return Replicates(True, STAMP, {"a": [0.1, 0.2]}, codes), metrics, False


def _order(raw: list[Any]) -> list[int]:
    return sorted(range(len(raw)), key=lambda i: (raw[i][1]["a"], i))


@pytest.mark.parametrize("seed", range(8))
def test_a_board_changed_by_a_few_entries_ranks_as_from_scratch(seed: int) -> None:
    rng = np.random.default_rng(seed)
    raw = [_entry(rng, rng.random() < 0.15) for _ in range(int(rng.integers(3, 30)))]
    held: dict[str, Any] = {}
    _standings(raw, _order(raw), DEFINITION, held)
    for _ in range(12):
        change = rng.integers(0, 4)
        at = int(rng.integers(0, len(raw)))
        if change == 0:  # one more scored
            raw.insert(at, _entry(rng, False))
        elif change == 1 and len(raw) > 2:  # one leaves
            raw.pop(at)
        elif change == 2:  # one rescored
            raw[at] = _entry(rng, bool(raw[at][2]))
        else:  # the board read in another order, several changes at once
            raw = [raw[i] for i in rng.permutation(len(raw))]
            raw += [_entry(rng, rng.random() < 0.5) for _ in range(int(rng.integers(0, 7)))]
        order = _order(raw)
        assert _standings(raw, order, DEFINITION, held) == _standings(raw, order, DEFINITION)
