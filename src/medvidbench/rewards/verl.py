"""verl-style reward functions: ``compute_score`` for verl's per-sample reward manager,
``compute_score_batch`` for its batch manager.

Point ``custom_reward_function.path`` at this file and ``custom_reward_function.name`` at one of
the two; ``custom_reward_function.reward_kwargs`` reach them as keyword arguments (``stats``,
``k``, ``judge``: ``none`` or ``openai``, ``options``). Each call returns
``{"score", "raw", "format"}``: verl trains on ``score`` and logs the others.

Importing this module imports neither verl nor torch; the scorers load on the first call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from medvidbench.rewards import Rewarder


@lru_cache(maxsize=8)
def _rewarder(stats: str | None, k: float, judge: str, options: str) -> Rewarder:
    llm = None
    if judge == "openai":
        from medvidbench import benchmarks
        from medvidbench.core.judge.client import judge_from_settings

        judging = benchmarks.get(None).judging  # the default benchmark's (MedVidBench's)
        llm = judge_from_settings(judging.rubric.version if judging else "")
    elif judge != "none":
        from medvidbench.core.errors import UsageError

        raise UsageError(f"unknown judge {judge!r}; expected none or openai")
    return Rewarder(stats, k=k, judge=llm, options=json.loads(options))


def _get(stats: str | None, k: float, judge: str, options: Mapping[str, Any] | None) -> Rewarder:
    return _rewarder(stats, float(k), judge, json.dumps(options or {}, sort_keys=True))


def _row(reward: float, raw: float, fmt: float) -> dict[str, float]:
    return {"score": reward, "raw": raw, "format": 0.0 if math.isnan(fmt) else fmt}


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    stats: str | None = None,
    k: float = 3.0,
    judge: str = "none",
    options: Mapping[str, Any] | None = None,
) -> dict[str, float]:
    """One response's reward (verl's naive reward manager calls it once per response)."""
    out = _get(stats, k, judge, options).score([solution_str], [ground_truth])
    return _row(float(out.reward[0]), float(out.raw[0]), float(out.terms["format"][0]))


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    stats: str | None = None,
    k: float = 3.0,
    judge: str = "none",
    options: Mapping[str, Any] | None = None,
) -> list[dict[str, float]]:
    """A batch's rewards in one pass (verl's batch reward manager): one encoder batch for the
    similarities and one concurrent judge pool for the captions."""
    out = _get(stats, k, judge, options).score(list(solution_strs), list(ground_truths))
    return [
        _row(float(r), float(w), float(f))
        for r, w, f in zip(out.reward, out.raw, out.terms["format"], strict=True)
    ]
