"""Real worker processes: a worker killed mid-job, and two workers sharing a Redis queue."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select

from medvidbench.core.judge.fake_server import FakeJudgeServer
from medvidbench.server.jobs import attach_queue
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.models import Entry, Evaluation, Submission
from tests.server.conftest import build_runtime, make_user, redis_queue, start_worker, variants


def wait_for(predicate, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def status(runtime: Runtime, sid: int) -> str:
    with runtime.sessions() as session:
        return str(session.scalar(select(Submission.status).where(Submission.id == sid)))


def test_worker_killed_mid_judging_is_taken_over(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    with FakeJudgeServer(latency=0.05) as judge:
        env = {
            **os.environ,
            "MEDVIDBENCH_JUDGE_ENABLED": "1",
            "OPENAI_BASE_URL": judge.url,
            "OPENAI_API_KEY": "k",
            "MEDVIDBENCH_JUDGE_CONCURRENCY": "4",
            "MEDVIDBENCH_JOB_LEASE_SECONDS": "5",
        }
        os.environ.update(
            {k: env[k] for k in ("MEDVIDBENCH_JUDGE_ENABLED", "MEDVIDBENCH_JOB_LEASE_SECONDS")}
        )
        try:
            runtime = build_runtime(
                tmp_path, None, synthetic["ground_truth"], judge_enabled=True, job_lease_seconds=5
            )
            attach_queue(runtime)  # the embedded SQLite queue the worker consumes
            sub = submit(runtime, make_user(runtime), synthetic["strong"].read_bytes(), "Judged")
        finally:
            for k in ("MEDVIDBENCH_JUDGE_ENABLED", "MEDVIDBENCH_JOB_LEASE_SECONDS"):
                os.environ.pop(k, None)
        first = start_worker(runtime.data_dir, env)
        wait_for(lambda: status(runtime, sub.id) == "judging" and judge.answered >= 30)
        first.send_signal(signal.SIGKILL)
        first.wait()
        time.sleep(5.5)  # the dead worker's lease expires
        answered_before = judge.answered
        second = start_worker(runtime.data_dir, env)
        try:
            wait_for(lambda: status(runtime, sub.id) == "complete")
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(timeout=30)
    with runtime.sessions() as session:
        judge_ids = sorted(
            session.scalars(select(Evaluation.judge_id).where(Evaluation.submission_id == sub.id))
        )
        entries = session.scalar(select(func.count()).select_from(Entry))
        attempts = session.get(Submission, sub.id).attempts
    assert len(judge_ids) == 2 and judge_ids[0] == "" and judge_ids[1]  # scored, then judged
    assert entries == 1 and attempts == 3  # score, judge, judge taken over
    repeats = [p for p, n in Counter(judge.prompts).items() if n > 1]
    assert len(repeats) <= 4  # only the calls in flight at the kill were made again
    assert judge.answered > answered_before


@pytest.mark.parametrize("duplicate_delivery", [True])
def test_two_workers_on_redis_never_process_a_submission_twice(
    tmp_path: Path, synthetic: dict[str, Path], postgres_url: str, duplicate_delivery: bool
) -> None:
    import redis

    queue_url = redis_queue(11)
    env = {
        **os.environ,
        "MEDVIDBENCH_QUEUE_URL": queue_url,
        "MEDVIDBENCH_DATABASE_URL": postgres_url,
    }
    runtime = build_runtime(tmp_path, postgres_url, synthetic["ground_truth"], queue_url=queue_url)
    jobs = attach_queue(runtime)
    user = make_user(runtime)
    subs = [
        submit(runtime, user, data, f"m{i}")
        for i, data in enumerate(variants(synthetic["weak"], 20))
    ]
    if duplicate_delivery:
        for s in subs:
            jobs.score(s.id)  # every job is now in the queue twice
    workers = [start_worker(runtime.data_dir, env) for _ in range(2)]
    try:
        wait_for(lambda: all(status(runtime, s.id) == "scored" for s in subs))
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.wait(timeout=30)
        redis.Redis.from_url(queue_url).flushdb()
    with runtime.sessions() as session:
        attempts = list(session.scalars(select(Submission.attempts)))
        per_sub = session.execute(
            select(Evaluation.submission_id, func.count()).group_by(Evaluation.submission_id)
        ).all()
        entries = session.scalar(select(func.count()).select_from(Entry))
    assert attempts == [1] * 20
    assert sorted(n for _, n in per_sub) == [1] * 20 and entries == 20
