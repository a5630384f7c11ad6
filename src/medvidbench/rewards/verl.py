"""verl reward functions: ``compute_score`` for verl's ``naive`` reward manager (verl 0.9.x:
``reward.custom_reward_function.path``/``name``), ``compute_score_batch`` for the ``batch``
manager of releases up to 0.7.0 (docs/rewards.md).

``reward_kwargs`` reach them as keyword arguments (``stats``, ``k``, ``judge``: ``none`` or
``openai``, ``options``: a mapping, as an override writes it, or its JSON). Each row's
result is a dict with the same keys for every row (:data:`KEYS`), as verl's reward loop
requires: ``score`` (what verl trains on), ``raw``,
``format`` and the raw and normalised terms (NaN where a term does not apply to the row's
task), which verl keeps as the rows' extra info and, in validation, averages per
``data_source`` (``benchmark/task``, as ``rewards prepare --style verl`` writes it).

verl calls ``compute_score`` from a thread pool and from several worker processes; each process
builds one :class:`~medvidbench.rewards.Rewarder` per setting, however many threads ask at once.
Importing this module imports neither verl nor torch; the scorers load on the first call.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from medvidbench.core.errors import UsageError
from medvidbench.core.rewards import JUDGE, SCORE, SIMILARITY
from medvidbench.rewards import Rewarder, RewardInputError, Rewards

TERMS = (SCORE, SIMILARITY, JUDGE)
KEYS = (
    "score",
    "raw",
    "format",
    *(f"raw_{t}" for t in TERMS),
    *(f"normalised_{t}" for t in TERMS),
)
_rewarders: dict[tuple[str | None, float, str, str], Rewarder] = {}
_lock = threading.Lock()


def _build(stats: str | None, k: float, judge: str, options: str) -> Rewarder:
    llm = None
    if judge == "openai":
        from medvidbench import benchmarks
        from medvidbench.core.judge.client import judge_from_settings

        judging = benchmarks.get(None).judging  # the default benchmark's (MedVidBench's)
        llm = judge_from_settings(judging.rubric.version if judging else "")
    elif judge != "none":
        raise UsageError(f"unknown judge {judge!r}; expected none or openai")
    return Rewarder(stats, k=k, judge=llm, options=json.loads(options))


def _get(stats: str | None, k: float, judge: str, options: Any) -> Rewarder:
    key = (stats, float(k), judge, json.dumps(_options(options), sort_keys=True))
    with _lock:  # verl's threads ask at once: one rewarder (and one encoder) per setting
        if key not in _rewarders:
            _rewarders[key] = _build(*key)
        return _rewarders[key]


def _options(options: Any) -> dict[str, Any]:
    """The scoring options as plain data. verl hands ``reward_kwargs`` over as its config holds
    them, so ``options`` written as a mapping in an override arrives as OmegaConf's
    ``DictConfig`` (a mapping, not a dict: ``json`` cannot write it); written as a JSON string,
    it is read."""
    if options is None:
        return {}
    if isinstance(options, str):
        try:
            options = json.loads(options)
        except ValueError as exc:
            raise UsageError(f"options: not a mapping nor JSON ({exc})") from None
    if not isinstance(options, Mapping):
        raise UsageError(
            f"options: expected a mapping of benchmark to its options, got {type(options).__name__}"
        )
    plain: dict[str, Any] = _plain(options)
    return plain


def _plain(value: Any) -> Any:
    """Mappings and sequences of a config (OmegaConf's, say) as dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(v) for v in value]
    return value


def _row(out: Rewards, i: int) -> dict[str, float]:
    fmt = float(out.terms["format"][i])
    row = {"score": float(out.reward[i]), "raw": float(out.raw[i])}
    row["format"] = 0.0 if math.isnan(fmt) else fmt
    for t in TERMS:
        row[f"raw_{t}"] = float(out.terms[t][i])
        # without statistics the normalised terms are the raw ones, as the reward is
        row[f"normalised_{t}"] = float(out.normalised[t][i])
    return {key: row[key] for key in KEYS}  # the same keys, in the same order, on every row


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    stats: str | None = None,
    k: float = 3.0,
    judge: str = "none",
    options: Mapping[str, Any] | str | None = None,
) -> dict[str, float]:
    """One response's reward (verl's ``naive`` reward manager calls it once per response).

    Raises:
        RewardInputError: naming the row by its ``extra_info`` index and id when it has them
            (verl passes one row at a time, so the message's ``[0]`` is no help alone).
    """
    try:
        out = _get(stats, k, judge, options).score([solution_str], [ground_truth])
    except RewardInputError as exc:
        info = extra_info if isinstance(extra_info, Mapping) else {}
        named = [f"{key} {info[key]!r}" for key in ("index", "id") if key in info]
        if not named:
            raise
        raise RewardInputError(f"row {', '.join(named)}: {exc}") from None
    return _row(out, 0)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    stats: str | None = None,
    k: float = 3.0,
    judge: str = "none",
    options: Mapping[str, Any] | str | None = None,
) -> list[dict[str, float]]:
    """A batch's rewards in one pass (the ``batch`` reward manager of verl up to 0.7.0): one
    encoder batch for the similarities and one concurrent judge pool for the captions."""
    out = _get(stats, k, judge, options).score(list(solution_strs), list(ground_truths))
    return [_row(out, i) for i in range(len(out))]
