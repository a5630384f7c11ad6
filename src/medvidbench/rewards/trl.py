"""A reward function for TRL's ``GRPOTrainer`` (``reward_funcs=[...]``).

TRL calls a reward function with keyword arguments: ``prompts``, ``completions`` (strings, or
chat messages for a conversational dataset), ``completion_ids`` and every other column of the
dataset as a list (here ``ground_truth`` and ``task``, as ``medvidbench rewards prepare``
writes them), and logs each function under its ``__name__``. A row the function does not cover
(another task) gets None, which TRL ignores for that function.

TRL (1.x) also passes ``log_metric(name, value)`` and ``log_extra(column, values)``: through
them the function logs, per task, the batch's mean reward, raw reward, raw and normalised terms,
share of readable answers and whether the policy has saturated the normalisation
(``medvidbench/stg/raw_score``, ... averaged over each logging step next to TRL's own
``reward``), and adds each completion's task and raw reward to the completions table.

:func:`async_reward_function` gives the same as a coroutine function, which TRL awaits together
with its other async reward functions (their scoring and judge calls overlap).

:func:`reward_functions` gives one function per term (score, similarity, judge) for TRL's
``reward_weights`` and ``multi_objective_aggregation="normalize_then_sum"``.

Importing this module imports neither TRL nor torch; the scorers load on the first call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from medvidbench.core.errors import UsageError
from medvidbench.rewards import Rewarder, Rewards, RewardStats, decode_row
from medvidbench.rewards.rows import RewardInputError

COMPONENTS = ("score", "similarity", "judge")  # the terms a reward is combined from


def reward_function(
    stats: str | Path | RewardStats | Sequence[str | Path | RewardStats] | None = None,
    *,
    tasks: Collection[str] | None = None,
    k: float = 3.0,
    judge: Any = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    name: str | None = None,
    rewarder: Rewarder | None = None,
    rollouts: str | Path | None = None,
    component: str | None = None,
    shared: SharedBatch | None = None,
) -> Callable[..., list[float | None]]:
    """A GRPO reward function scoring with the benchmarks' own scorers.

    Args:
        stats: Normalisation statistics (``medvidbench rewards fit``); None: raw rewards.
        tasks: Only these tasks (others get None); None: every task.
        k, judge, options: As for :class:`~medvidbench.rewards.Rewarder`.
        name: What TRL logs it as (default ``medvidbench`` or ``medvidbench_<task>``).
        rewarder: Share one :class:`~medvidbench.rewards.Rewarder` between several functions.
        rollouts: Append every scored completion with its ground truth to this JSON-lines file
            (``{"completion", "ground_truth"}``), for ``medvidbench rewards fit --rollouts``.
        component: Only this term (``score``, ``similarity`` or ``judge``; see
            :meth:`~medvidbench.rewards.Rewards.component`), None for a row whose task has no
            such term; None: the combined reward. :func:`reward_functions` makes one per term.
        shared: A :class:`SharedBatch` the functions of one training step score through, so
            that a batch is scored once for all of them (:func:`reward_functions` sets it).

    The returned function keeps its last batch's :class:`~medvidbench.rewards.Rewards` as
    ``.last`` (raw and normalised terms, for logging; None when none of that batch was the
    function's).
    """
    scorer = shared.rewarder if shared is not None else rewarder
    scorer = scorer or Rewarder(stats, k=k, judge=judge, options=options)
    score_batch = shared.score if shared is not None else scorer.score
    wanted = _tasks(tasks)

    def reward(
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        ground_truth: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        if completions is None:
            raise UsageError("the reward function needs completions")
        if ground_truth is None:
            raise UsageError(
                "the training dataset has no ground_truth column: prepare it with "
                "`medvidbench rewards prepare`"
            )
        if len(ground_truth) != len(completions):
            raise RewardInputError(
                f"{len(completions)} completions but {len(ground_truth)} ground truths"
            )
        rows = [
            i
            for i in range(len(completions))
            if wanted is None or decode_row(ground_truth[i], f"ground_truth[{i}]")[1].task in wanted
        ]
        out: list[float | None] = [None] * len(completions)
        reward.last = None  # type: ignore[attr-defined]
        if not rows:  # none of this batch is the function's: its columns say so, row by row
            _columns(reward.__name__, None, rows, len(completions), kwargs)
            return out
        result = score_batch([completions[i] for i in rows], [ground_truth[i] for i in rows])
        values = result.reward if component is None else result.component(component)
        for n, i in enumerate(rows):
            out[i] = None if np.isnan(values[n]) else float(values[n])
        reward.last = result  # type: ignore[attr-defined]
        if rollouts is not None:
            append_rollouts(
                rollouts, [completions[i] for i in rows], [ground_truth[i] for i in rows]
            )
        _log(reward.__name__, scorer, result, values, rows, kwargs)
        _columns(reward.__name__, result, rows, len(completions), kwargs)
        return out

    if component is not None and component not in COMPONENTS:
        raise UsageError(f"no reward component {component!r} (known: {', '.join(COMPONENTS)})")
    reward.__name__ = name or (
        ("medvidbench" if wanted is None else "medvidbench_" + "_".join(sorted(wanted)))
        + (f"_{component}" if component is not None else "")
    )
    reward.__qualname__ = reward.__name__
    reward.last = None  # type: ignore[attr-defined]
    return reward


class SharedBatch:
    """One batch's rewards for the ``users`` reward functions of a training step: the first
    to ask for a batch scores it, the others of the same step get its rewards (a batch asked
    for again after that is scored again: the next step's, even if it is the same)."""

    def __init__(self, rewarder: Rewarder, users: int) -> None:
        self.rewarder, self.users = rewarder, users
        self._key: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        self._result: Rewards | None = None
        self._left = 0

    def score(self, completions: Sequence[Any], ground_truths: Sequence[Any]) -> Rewards:
        key = (tuple(map(str, completions)), tuple(map(str, ground_truths)))
        if self._left > 0 and key == self._key and self._result is not None:
            self._left -= 1
            return self._result
        self._result = self.rewarder.score(completions, ground_truths)
        self._key, self._left = key, self.users - 1
        return self._result


def reward_functions(
    stats: str | Path | RewardStats | Sequence[str | Path | RewardStats] | None = None,
    *,
    components: Sequence[str] = COMPONENTS,
    rollouts: str | Path | None = None,
    **settings: Any,
) -> list[Callable[..., list[float | None]]]:
    """One reward function per term (rule-based score, similarity, judge), sharing one
    :class:`~medvidbench.rewards.Rewarder` (a batch is scored once), for TRL's
    ``multi_objective_aggregation="normalize_then_sum"`` (GDPO: each term normalised within
    its group before the weighted sum) with ``reward_weights``. ``settings`` are
    :func:`reward_function`'s; ``rollouts`` is written by the first function only."""
    rewarder = settings.pop("rewarder", None) or Rewarder(
        stats,
        **{k: settings.pop(k) for k in ("k", "judge", "options") if k in settings},
    )
    shared = SharedBatch(rewarder, len(components))
    return [
        reward_function(
            shared=shared,
            component=c,
            rollouts=rollouts if n == 0 else None,
            **settings,
        )
        for n, c in enumerate(components)
    ]


def async_reward_function(
    stats: str | Path | RewardStats | Sequence[str | Path | RewardStats] | None = None,
    **settings: Any,
) -> Callable[..., Awaitable[list[float | None]]]:
    """:func:`reward_function` as a coroutine function. TRL (1.x) awaits its async reward
    functions together (``asyncio.gather`` on its own event loop), so several of them (one per
    task, say) score at the same time: each scores on a worker thread, and their judge calls
    overlap instead of queueing behind each other. The arguments are :func:`reward_function`'s;
    the synchronous function is kept as ``.sync`` (its ``.last`` holds the last batch)."""
    import asyncio

    sync = reward_function(stats, **settings)

    async def reward(**kwargs: Any) -> list[float | None]:
        return await asyncio.to_thread(sync, **kwargs)

    reward.__name__ = reward.__qualname__ = sync.__name__
    reward.sync = sync  # type: ignore[attr-defined]
    return reward


def _tasks(tasks: Collection[str] | None) -> frozenset[str] | None:
    """The tasks a function covers, each one a benchmark offers a reward for (a misspelt one
    would cover nothing, and a trainer would only see NaN for that function)."""
    if tasks is None:
        return None
    if isinstance(tasks, str):
        raise UsageError(f"tasks: a list of task names, not the string {tasks!r}")
    tasks = list(tasks)  # a generator is read once
    if not tasks:
        raise UsageError("tasks: no task named (None: every task)")
    from medvidbench import benchmarks
    from medvidbench.rewards.rows import spec_of

    known = {
        task
        for slug in benchmarks.slugs()
        if (bench := benchmarks.get(slug)).rewards is not None
        for task in spec_of(bench).tasks
    }
    unknown = sorted(set(tasks) - known)
    if unknown:
        raise UsageError(
            f"no reward for task {', '.join(map(repr, unknown))}; tasks with a reward: "
            f"{', '.join(sorted(known))}"
        )
    return frozenset(tasks)


def _log(
    prefix: str,
    scorer: Rewarder,
    result: Rewards,
    values: np.ndarray,
    rows: Sequence[int],
    kwargs: Mapping[str, Any],
) -> None:
    """Per-task metrics through TRL's ``log_metric`` (absent: nothing); ``values`` are what the
    function returned for its rows (the reward, or one component), logged as ``reward``."""
    log_metric = kwargs.get("log_metric")
    if not callable(log_metric):
        return
    metrics = result.summary(prefix, reward=values)
    if scorer.saturation is not None and scorer.normalisers:
        saturated = {s.task for s in scorer.saturation.status()}
        for name in sorted(set(result.task)):
            metrics[f"{prefix}/{name}/saturated"] = float(name in saturated)
    for key, value in metrics.items():
        log_metric(key, value)


def _columns(
    prefix: str, result: Rewards | None, rows: Sequence[int], n: int, kwargs: Mapping[str, Any]
) -> None:
    """Each completion's task and raw reward through TRL's ``log_extra`` (absent: nothing),
    None for a completion the function does not cover. Called for every batch, rows or none:
    TRL keeps a column's values of an earlier step for a step that does not give them."""
    log_extra = kwargs.get("log_extra")
    if not callable(log_extra):
        return
    tasks: list[str | None] = [None] * n
    raw: list[float | None] = [None] * n
    for k, i in enumerate(rows):
        assert result is not None
        tasks[i], raw[i] = result.task[k], float(result.raw[k])
    log_extra(f"{prefix}_task", tasks)
    log_extra(f"{prefix}_raw", raw)


def append_rollouts(
    path: str | Path, completions: Sequence[Any], ground_truths: Sequence[Any]
) -> None:
    """Append completions and their ground-truth columns to a JSON-lines rollouts file (one
    write per batch; give each training process a file of its own)."""
    lines = "".join(
        _line({"completion": c, "ground_truth": g})
        for c, g in zip(completions, ground_truths, strict=True)
    )
    with Path(path).open("a", encoding="utf-8") as fh:
        fh.write(lines)


def _line(row: Mapping[str, Any]) -> str:
    """One JSON line, readable as UTF-8 text; a completion holding a lone surrogate (bytes a
    pipeline kept undecoded) has it written as an escape, which no UTF-8 file can hold."""
    line = json.dumps(row, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(row)
    return line + "\n"


__all__ = ["Rewards", "append_rollouts", "reward_function"]
