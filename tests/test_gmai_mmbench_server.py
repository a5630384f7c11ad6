"""GMAI-MMBench on the leaderboard: VLMEvalKit's prediction file of a perfect model is scored
100 % and ranked, in process through the submission service and over HTTP through
``medvidbench submit`` against a live ``medvidbench serve``; an incomplete one is refused."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from medvidbench.benchmarks.gmai_mmbench import BENCHMARK
from medvidbench.core.errors import InvalidSubmissionError
from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.submissions import submit
from tests.server.conftest import build_runtime, make_user
from tests.web.live import CLI, create_user, live_server

SLUG = "gmai-mmbench"


def test_the_submission_service_scores_and_ranks_vlmevalkits_file(tmp_path: Path) -> None:
    assert BENCHMARK.demo is not None
    demo = BENCHMARK.demo.synthesise(tmp_path / "demo", 150, 4)
    rt = build_runtime(tmp_path, None, demo["ground_truth"], benchmarks=SLUG)
    try:
        user = make_user(rt)
        for archetype, name in (("weak", "Weak model"), ("perfect", "Perfect model")):
            submit(
                rt,
                user,
                demo[archetype].read_bytes(),
                name,
                benchmark=SLUG,
                filename=demo[archetype].name,
            )
        rows = board_rows(rt, "community", slug=SLUG)
        assert [r.model_name for r in rows] == ["Perfect model", "Weak model"]
        assert rows[0].metrics == {"acc": 1.0} and rows[0].profile == "vlmevalkit"
        weak = rows[1].metrics["acc"]
        assert weak is not None and 0.15 < weak < 0.6
        lines = demo["perfect"].read_bytes().splitlines(keepends=True)
        partial = b"".join([lines[0], *lines[2:]])  # the first question left out
        with pytest.raises(InvalidSubmissionError, match="149 of 150"):
            submit(rt, user, partial, "Partial", benchmark=SLUG, filename="partial.tsv")
        assert len(board_rows(rt, "community", slug=SLUG)) == 2
    finally:
        rt.engine.dispose()


def test_medvidbench_submit_against_a_live_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"MEDVIDBENCH_BENCHMARKS": SLUG, "COLUMNS": "200"}
    full_env = {**os.environ, **env}
    create_user(data, "lab", "lab-password-123")
    token = subprocess.run(
        [*CLI, "tokens", "create", "lab", "--data-dir", str(data)],
        capture_output=True, text=True, env=full_env, timeout=120, check=True,
    ).stdout.strip()  # fmt: skip
    assert token.startswith("mvb_")
    with live_server(data, env=env) as live:
        perfect = data / "demo" / SLUG / "predictions_perfect.tsv"
        assert perfect.is_file()  # the demo set a fresh server writes for each benchmark
        sent = subprocess.run(
            [*CLI, "submit", str(perfect), "--server", live.url, "--token", token,
             "--model-name", "Perfect reader", "--benchmark", SLUG, "--wait"],
            capture_output=True, text=True, env=full_env, timeout=180,
        )  # fmt: skip
        assert sent.returncode == 0, sent.stdout + sent.stderr
        board = httpx.get(f"{live.url}/api/v1/benchmarks/{SLUG}/boards/community").json()
        assert [(r["model_name"], r["metrics"]) for r in board] == [
            ("Perfect reader", {"acc": 1.0})
        ]
        about = httpx.get(f"{live.url}/b/{SLUG}/about")
        assert about.status_code == 200 and "2408.03361" in about.text
