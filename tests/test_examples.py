"""The runnable examples in examples/, run as a user runs them.

The GRPO example needs the training extras (tests/training-requirements.txt: torch and TRL);
without them it is skipped on a developer's machine and fails under CI=true, where they must
be installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from medvidbench.core.errors import UsageError
from medvidbench.rewards import fit_rollouts

EXAMPLES = Path(__file__).parent.parent / "examples"


def needs(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(missing)} not installed (tests/training-requirements.txt)")
        pytest.skip(f"{', '.join(missing)} not installed (tests/training-requirements.txt)")


def _run_example(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / "grpo_tiny_cpu.py"), "--out", str(tmp_path / "work"),
         *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )  # fmt: skip


def test_grpo_on_a_tiny_cpu_model_logs_our_per_task_rewards(tmp_path: Path) -> None:
    """As docs/rewards.md runs it: 2 steps of 8 completions of one prompt each, the tasks in
    turn; next-action's rewards differ within a group, so a step has a non-zero gradient."""
    needs("torch", "trl")
    metrics, rollouts = tmp_path / "metrics.json", tmp_path / "rollouts.jsonl"
    done = _run_example(
        tmp_path, "--steps", "2", "--metrics", str(metrics), "--rollouts", str(rollouts)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    history = json.loads(metrics.read_text())
    steps = [h for h in history if "reward" in h]
    assert len(steps) == 2
    for step in steps:
        # TRL's own aggregate, and ours per task next to it (through TRL's log_metric)
        assert "rewards/medvidbench/mean" in step
        ours = {k for k in step if k.startswith("medvidbench/")}
        tasks = {k.split("/")[1] for k in ours}
        assert tasks and tasks <= {"next_action", "stg", "tal"}
        for task in tasks:
            assert {f"medvidbench/{task}/{n}" for n in ("raw", "reward", "raw_score")} <= ours
            assert 0.0 <= step[f"medvidbench/{task}/raw"] <= 1.0
    assert any(step["grad_norm"] > 0 for step in steps), steps  # the policy moves
    # 2 steps x 8 completions, each with its ground truth: enough to refit from
    lines = rollouts.read_text().splitlines()
    assert len(lines) == 16
    stats = fit_rollouts(rollouts, min_samples=1)
    assert stats.provenance["rows"] == 16 and stats.provenance["source"] == "rollouts"


def test_async_reward_functions_are_awaited_together_by_trl(tmp_path: Path) -> None:
    """One async reward function per task: TRL awaits them with asyncio.gather and logs each
    under its name; the rows of other tasks are None to it."""
    needs("torch", "trl")
    metrics = tmp_path / "metrics.json"
    done = _run_example(tmp_path, "--steps", "1", "--async-rewards", "--metrics", str(metrics))
    assert done.returncode == 0, done.stderr[-3000:]
    (step,) = [h for h in json.loads(metrics.read_text()) if "reward" in h]
    names = {k.split("/")[1] for k in step if k.startswith("rewards/") and k.endswith("/mean")}
    assert names == {"medvidbench_next_action", "medvidbench_stg", "medvidbench_tal"}
    scored = [n for n in names if step[f"rewards/{n}/mean"] is not None]
    assert len(scored) == 1  # a step's one prompt is one task's


def test_the_async_function_gives_what_the_sync_one_gives(synthetic_gt: Any) -> None:
    import asyncio

    from medvidbench import benchmarks
    from medvidbench.rewards import ground_truth_column, spec_of
    from medvidbench.rewards.trl import async_reward_function, reward_function

    bench = benchmarks.get("medvidbench")
    items = [s for s in synthetic_gt.samples if s.task in ("stg", "tal", "next_action")][:30]
    truths = [
        ground_truth_column(bench, s, e)
        for s, e in zip(items, spec_of(bench).row_extras(items), strict=True)
    ]
    completions = [s.answer if n % 2 else "no idea" for n, s in enumerate(items)]
    sync = reward_function()(completions=completions, ground_truth=truths)
    fn = async_reward_function()
    assert asyncio.iscoroutinefunction(fn) and fn.__name__ == "medvidbench"
    assert asyncio.run(fn(completions=completions, ground_truth=truths)) == sync
    assert len(set(sync)) > 1  # right and wrong answers: rewards that differ


def test_reward_components_add_up_to_the_reward_and_score_a_batch_once(synthetic_gt: Any) -> None:
    """One function per term: each term times the gate, None where a task has no such term;
    summed with combine's weights they give the combined reward; the batch is scored once."""
    from medvidbench import benchmarks
    from medvidbench.rewards import ground_truth_column, spec_of
    from medvidbench.rewards.trl import reward_function, reward_functions

    bench = benchmarks.get("medvidbench")
    picked = [s for s in synthetic_gt.samples if s.task in ("tal", "video_summary")]
    items = picked[:12] + [s for s in picked if s.task == "video_summary"][:6]
    items += [s for s in synthetic_gt.samples if s.task == "dense_captioning"][:6]
    truths = [
        ground_truth_column(bench, s, e)
        for s, e in zip(items, spec_of(bench).row_extras(items), strict=True)
    ]
    completions = [s.answer if n % 3 else "no idea" for n, s in enumerate(items)]
    from medvidbench.rewards import Rewarder

    rewarder = Rewarder()
    funcs = reward_functions(rewarder=rewarder)
    assert [f.__name__ for f in funcs] == [
        "medvidbench_score",
        "medvidbench_similarity",
        "medvidbench_judge",
    ]
    calls = 0
    scored = rewarder.score_items

    def counting(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        return scored(*args)

    rewarder.score_items = counting  # type: ignore[method-assign]
    score, similarity, judge = (f(completions=completions, ground_truth=truths) for f in funcs)
    assert calls == 1
    funcs[0](completions=completions, ground_truth=truths)  # the next step: scored again
    assert calls == 2
    combined = reward_function()(completions=completions, ground_truth=truths)
    for n, item in enumerate(items):
        assert judge[n] is None  # no judge configured
        if item.task == "tal":
            assert score[n] is not None and similarity[n] is None
            assert combined[n] == pytest.approx(score[n])
        elif item.task == "dense_captioning":  # both parts, 50/50 (similarity for the caption)
            assert score[n] is not None and similarity[n] is not None
            assert combined[n] == pytest.approx(0.5 * score[n] + 0.5 * similarity[n])
        else:
            assert score[n] is None and similarity[n] is not None
            assert combined[n] == pytest.approx(similarity[n])  # the judge's part: similarity
    assert len({v for v in score if v is not None}) > 1
    with pytest.raises(UsageError, match="no reward component 'style'"):
        reward_function(component="style")


def test_grpo_with_one_reward_function_per_term(tmp_path: Path) -> None:
    """TRL normalises each term in its group before the weighted sum (normalize_then_sum)
    and logs each function: score on next-action, similarity on video summaries."""
    needs("torch", "trl")
    metrics = tmp_path / "metrics.json"
    done = _run_example(
        tmp_path, "--steps", "2", "--components", "--tasks", "next_action,video_summary",
        "--metrics", str(metrics),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    steps = [h for h in json.loads(metrics.read_text()) if "reward" in h]
    names = {k.split("/")[1] for s in steps for k in s if k.startswith("rewards/")}
    assert names == {"medvidbench_score", "medvidbench_similarity"}
    means = [s[f"rewards/{n}/mean"] for s in steps for n in names]
    assert any(m is not None and m > 0 for m in means)
    assert any(s.get("grad_norm", 0) > 0 for s in steps)
