"""Scale-out: the web app on PostgreSQL, two worker processes on Redis, 100 submissions."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from medvidbench.server.jobs import attach_queue
from medvidbench.server.services.accounts import create_token
from medvidbench.server.store.models import Entry, Evaluation, Submission
from medvidbench.server.web.app import create_app
from tests.server.conftest import (
    build_runtime,
    make_user,
    redis_queue,
    start_worker,
    variants,
    wait_for_scored,
)


def test_hundred_submissions_through_the_api_two_workers_each_scored_once(
    tmp_path: Path, synthetic: dict[str, Path], postgres_url: str
) -> None:
    import redis

    queue_url = redis_queue(12)
    runtime = build_runtime(tmp_path, postgres_url, synthetic["ground_truth"], queue_url=queue_url)
    attach_queue(runtime)  # the web app enqueues to Redis
    user = make_user(runtime, "loader")
    token = create_token(runtime, user)
    env = {
        **os.environ,
        "MEDVIDBENCH_QUEUE_URL": queue_url,
        "MEDVIDBENCH_DATABASE_URL": postgres_url,
    }
    logs = [tmp_path / f"worker{i}.log" for i in range(2)]
    workers = [start_worker(runtime.data_dir, env, log=log) for log in logs]
    try:
        with TestClient(create_app(runtime)) as client:
            for i, data in enumerate(variants(synthetic["weak"], 100)):
                response = client.post(
                    "/api/v1/submissions",
                    headers={"Authorization": f"Bearer {token}"},
                    files={"file": (f"p{i}.json", data)},
                    data={"model_name": f"model {i}"},
                )
                assert response.status_code == 202, response.text
        wait_for_scored(runtime, 100, 180)
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.wait(timeout=30)
        redis.Redis.from_url(queue_url).flushdb()
    with runtime.sessions() as session:
        attempts = list(session.scalars(select(Submission.attempts)))
        evaluations = session.scalar(select(func.count()).select_from(Evaluation))
        entries = session.scalar(select(func.count()).select_from(Entry))
    assert attempts == [1] * 100 and evaluations == 100 and entries == 100
    ran = [log.read_text().count("Executing") for log in logs]
    assert all(n > 0 for n in ran), ran  # both workers took part
    assert sum(ran) >= 100
