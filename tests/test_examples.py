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

import pytest

from medvidbench.rewards import fit_rollouts

EXAMPLES = Path(__file__).parent.parent / "examples"


def needs(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(missing)} not installed (tests/training-requirements.txt)")
        pytest.skip(f"{', '.join(missing)} not installed (tests/training-requirements.txt)")


def test_grpo_on_a_tiny_cpu_model_logs_our_per_task_rewards(tmp_path: Path) -> None:
    needs("torch", "trl")
    metrics, rollouts = tmp_path / "metrics.json", tmp_path / "rollouts.jsonl"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "grpo_tiny_cpu.py"),
            "--steps",
            "2",
            "--tasks",
            "stg,tal",
            "--out",
            str(tmp_path / "work"),
            "--metrics",
            str(metrics),
            "--rollouts",
            str(rollouts),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
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
        assert tasks and tasks <= {"stg", "tal"}
        for task in tasks:
            assert {f"medvidbench/{task}/{n}" for n in ("raw", "reward", "raw_score")} <= ours
            assert 0.0 <= step[f"medvidbench/{task}/raw"] <= 1.0
    # 2 steps x 4 completions, each with its ground truth: enough to refit from
    lines = rollouts.read_text().splitlines()
    assert len(lines) == 8
    stats = fit_rollouts(rollouts, min_samples=1)
    assert stats.provenance["rows"] == 8 and stats.provenance["source"] == "rollouts"
