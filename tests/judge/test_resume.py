"""A judged evaluation killed halfway resumes without repeating any finished judgement."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from medvidbench.benchmarks.medvidbench.rubric import PROMPT_VERSION
from medvidbench.core.judge.cache import SQLiteJudgeCache
from medvidbench.core.judge.fake_server import FakeJudgeServer


def test_sigkill_mid_judging_then_rerun(synthetic: dict[str, Path], tmp_path: Path) -> None:
    cache = tmp_path / "judge.sqlite3"
    with FakeJudgeServer(latency=0.05) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "k",
            "MEDVIDBENCH_JUDGE_CONCURRENCY": "4",
        }
        cmd = [
            sys.executable,
            "-m",
            "medvidbench",
            "evaluate",
            str(synthetic["strong"]),
            "--ground-truth",
            str(synthetic["ground_truth"]),
            "--judge",
            "openai",
            "--judge-cache",
            str(cache),
            "--json",
        ]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while server.answered < 40 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # let the server finish the requests that were in flight: until every request it
        # read is answered and nothing has changed for half a second (however loaded)
        settle = time.monotonic() + 60
        seen = (-1, -1)
        while time.monotonic() < settle:
            now = (server.requests, server.answered)
            if now == seen and now[0] == now[1]:
                break
            seen = now
            time.sleep(0.5)
        answered_first = server.answered
        stored_first = len(SQLiteJudgeCache(cache))
        assert 0 < stored_first <= answered_first  # up to 4 (the concurrency) in flight

        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        # the judge is stamped with the benchmark's own rubric version
        assert json.loads(done.stdout)["judge"]["prompt_version"] == PROMPT_VERSION
        unique_pairs = len(SQLiteJudgeCache(cache))
        first, second = server.prompts[:answered_first], server.prompts[answered_first:]
    assert len(set(first)) == len(first) and len(set(second)) == len(second)
    repeated = set(first) & set(second)
    # Only calls in flight at the kill (answered, never stored) are made again: at most 4.
    assert len(repeated) == answered_first - stored_first <= 4
    assert len(set(first) | set(second)) == unique_pairs
