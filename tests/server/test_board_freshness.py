"""The board every visitor sees, held in a web process's memory, shows a submission scored by a
worker in another process within the promised time (MEDVIDBENCH_BOARD_RECHECK_SECONDS: at most
about twice it), and a visitor who signed in sees it at once."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.server.jobs import attach_queue
from medvidbench.server.services.accounts import create_token
from medvidbench.server.web.app import create_app
from tests.server.conftest import (
    build_runtime,
    make_user,
    redis_queue,
    scored_count,
    start_worker,
)

BOARD = "/b/medvidbench/board/community"


def test_a_worker_elsewhere_scores_and_the_held_board_shows_it_within_twice_the_window(
    tmp_path: Path, synthetic: dict[str, Path], postgres_url: str
) -> None:
    import redis

    queue_url = redis_queue(14)
    runtime = build_runtime(tmp_path, postgres_url, synthetic["ground_truth"], queue_url=queue_url)
    assert runtime.board_versions.seconds == 1.0  # the default
    attach_queue(runtime)  # this web process runs no job: it enqueues to Redis
    token = create_token(runtime, make_user(runtime, "fresh"))
    env = {
        **os.environ,
        "MEDVIDBENCH_QUEUE_URL": queue_url,
        "MEDVIDBENCH_DATABASE_URL": postgres_url,
    }
    worker = start_worker(runtime.data_dir, env, workers=1, log=tmp_path / "worker.log")
    try:
        with TestClient(create_app(runtime)) as client:
            visitor = TestClient(client.app)
            assert "Fresh Model" not in visitor.get(BOARD).text  # the page is held from now on
            sent = client.post(
                "/api/v1/submissions",
                headers={"Authorization": f"Bearer {token}"},
                files={"file": ("p.json", synthetic["weak"].read_bytes())},
                data={"model_name": "Fresh Model"},
            )
            assert sent.status_code == 202, sent.text
            deadline = time.monotonic() + 120
            while scored_count(runtime) < 1:  # the moment it is stored
                assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-2000:]
                visitor.get(BOARD)  # a visitor meanwhile keeps the page and its version held
                time.sleep(0.02)
            scored_at = time.monotonic()
            while True:
                # every request sent more than about two windows after the commit shows it
                # (measured from when it was sent: how stale the page was, not how long a
                # loaded machine took to render it)
                asked = time.monotonic()
                if "Fresh Model" in visitor.get(BOARD).text:
                    break
                assert asked - scored_at < 2 * 1.0 + 0.5, "not shown within ~2 s"
                time.sleep(0.05)
            # through the API (no memory of the page) it is there at once
            listed = client.get("/api/v1/benchmarks/medvidbench/boards/community").json()
            assert "Fresh Model" in str(listed)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        redis.Redis.from_url(queue_url).flushdb()
