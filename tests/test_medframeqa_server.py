"""MedFrameQA on the leaderboard: the official results file of a perfect model is scored 100 %
and ranked, in process through the submission service and over HTTP through
``medvidbench submit`` against a live ``medvidbench serve``; an incomplete one is refused."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from medvidbench.benchmarks.medframeqa import BENCHMARK
from medvidbench.core.errors import InvalidSubmissionError
from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.submissions import submit
from tests.server.conftest import build_runtime, make_user
from tests.web.live import CLI, create_user, live_server


def test_the_submission_service_scores_and_ranks_the_official_file(tmp_path: Path) -> None:
    assert BENCHMARK.demo is not None
    demo = BENCHMARK.demo.synthesise(tmp_path / "demo", 150, 4)
    rt = build_runtime(tmp_path, None, demo["ground_truth"], benchmarks="medframeqa")
    try:
        user = make_user(rt)
        for archetype, name in (("weak", "Weak model"), ("perfect", "Perfect model")):
            submit(rt, user, demo[archetype].read_bytes(), name, benchmark="medframeqa")
        rows = board_rows(rt, "community", slug="medframeqa")
        assert [r.model_name for r in rows] == ["Perfect model", "Weak model"]
        assert rows[0].metrics == {"accuracy": 1.0} and rows[0].profile == "official"
        weak = rows[1].metrics["accuracy"]
        assert weak is not None and 0.15 < weak < 0.6
        records = json.loads(demo["perfect"].read_text())
        with pytest.raises(InvalidSubmissionError, match="149 of 150"):
            submit(rt, user, json.dumps(records[1:]).encode(), "Partial", benchmark="medframeqa")
        assert len(board_rows(rt, "community", slug="medframeqa")) == 2
    finally:
        rt.engine.dispose()


def test_medvidbench_submit_against_a_live_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"MEDVIDBENCH_BENCHMARKS": "medframeqa", "COLUMNS": "200"}
    full_env = {**os.environ, **env}
    create_user(data, "lab", "lab-password-123")
    token = subprocess.run(
        [*CLI, "tokens", "create", "lab", "--data-dir", str(data)],
        capture_output=True, text=True, env=full_env, timeout=120, check=True,
    ).stdout.strip()  # fmt: skip
    assert token.startswith("mvb_")
    with live_server(data, env=env) as live:
        perfect = data / "demo" / "medframeqa" / "predictions_perfect.json"
        assert perfect.is_file()  # the demo set a fresh server writes for each benchmark
        sent = subprocess.run(
            [*CLI, "submit", str(perfect), "--server", live.url, "--token", token,
             "--model-name", "Perfect reader", "--benchmark", "medframeqa", "--wait"],
            capture_output=True, text=True, env=full_env, timeout=180,
        )  # fmt: skip
        assert sent.returncode == 0, sent.stdout + sent.stderr
        board = httpx.get(f"{live.url}/api/v1/benchmarks/medframeqa/boards/community").json()
        assert [(r["model_name"], r["metrics"]) for r in board] == [
            ("Perfect reader", {"accuracy": 1.0})
        ]
        about = httpx.get(f"{live.url}/b/medframeqa/about")
        assert about.status_code == 200 and "2505.16964" in about.text
