"""Training rewards computed by the scorers that rank the board (docs/rewards.md).

>>> from medvidbench.rewards import Rewarder
>>> rewarder = Rewarder(stats="stats.json")            # doctest: +SKIP
>>> out = rewarder.score(completions, ground_truths)   # doctest: +SKIP
>>> out.reward, out.raw, out.terms["score"]            # doctest: +SKIP

A row's ground truth is the JSON the preparation command writes (``medvidbench rewards
prepare``): ``{"benchmark": slug, "item": {...}}``; rows of several benchmarks may share a batch.
Importing this module imports neither the sentence encoder nor the judge client; they load on the
first batch that needs them.
"""

from __future__ import annotations

from medvidbench.core.rewards import RewardStats
from medvidbench.rewards.fit import fit, fit_rollouts
from medvidbench.rewards.rewarder import CAPTION_WEIGHT, PART_WEIGHT, Rewarder, Rewards, combine
from medvidbench.rewards.rows import (
    RewardInputError,
    _decode_text,  # noqa: F401  (bench/bench_rewards.py clears its cache)
    answered_rows,
    completion_text,
    decode_row,
    ground_truth_column,
    spec_of,
)

__all__ = [
    "CAPTION_WEIGHT",
    "PART_WEIGHT",
    "RewardInputError",
    "RewardStats",
    "Rewarder",
    "Rewards",
    "answered_rows",
    "combine",
    "completion_text",
    "decode_row",
    "fit",
    "fit_rollouts",
    "ground_truth_column",
    "spec_of",
]
