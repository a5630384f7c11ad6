"""Faults: the judge endpoint failing for a while, the database restarting under workers."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import func, select

from medvidbench.core.judge.fake_server import FakeJudgeServer
from medvidbench.server.services.evaluations import request_rejudge
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.models import Evaluation, Submission
from tests.server.conftest import build_runtime, make_user, start_worker, wait_for_scored


def judged_runtime(tmp_path: Path, synthetic: dict[str, Path], url: str):  # type: ignore[no-untyped-def]
    return build_runtime(
        tmp_path,
        None,
        synthetic["ground_truth"],
        judge_enabled=True,
        judge_base_url=url,
        judge_api_key="k",
        judge_concurrency=4,
        judge_max_attempts=5,
    )


def test_judge_outage_for_a_while_then_recovery(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    with FakeJudgeServer(outage_requests=30) as judge:
        runtime = judged_runtime(tmp_path, synthetic, judge.url)
        sub = submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Outage")
        with runtime.sessions() as session:
            row = session.get(Submission, sub.id)
            assert row is not None and row.status == "complete"
            judged = session.scalar(
                select(Evaluation).where(
                    Evaluation.submission_id == sub.id, Evaluation.judge_id != ""
                )
            )
        assert judged is not None and judged.judge["failures"] == 0
        assert judged.judge["retries"] >= 30 and judged.metrics["vs_llm"] is not None
        asked = judge.requests
        # Re-judging later asks nothing again: every pair is cached.
        assert request_rejudge(runtime, sub.id)
        runtime.queue.judge(sub.id)  # type: ignore[attr-defined]
        assert judge.requests == asked
        with runtime.sessions() as session:
            assert session.get(Submission, sub.id).status == "complete"  # type: ignore[union-attr]
            assert session.scalar(select(func.count()).select_from(Evaluation)) == 2


def test_judge_down_throughout_still_reaches_a_final_state(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    with FakeJudgeServer(rate_500=1.0) as judge:
        runtime = judged_runtime(tmp_path, synthetic, judge.url)
        runtime.settings.judge_max_attempts = 2
        sub = submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Down")
        with runtime.sessions() as session:
            row = session.get(Submission, sub.id)
            judged = session.scalar(
                select(Evaluation).where(
                    Evaluation.submission_id == sub.id, Evaluation.judge_id != ""
                )
            )
    assert row is not None and row.status == "complete"
    assert judged is not None and judged.metrics["vs_llm"] is None  # never a made-up score
    assert judged.judge["success_rate"] == 0.0 and judged.judge["failures"] > 0
    assert judged.metrics["tag_miou_03"] is not None  # rule-based metrics unaffected
    json.dumps(judged.judge)


def test_database_restart_under_two_workers(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    """A private PostgreSQL cluster restarted while two workers score 30 submissions."""
    import os
    import signal

    from medvidbench.server.jobs import attach_queue
    from medvidbench.server.store.models import Entry
    from tests.server.conftest import variants
    from tests.server.private_services import private_postgres, private_redis

    with private_postgres() as postgres, private_redis() as queue:
        runtime = build_runtime(
            tmp_path,
            postgres.url,
            synthetic["ground_truth"],
            queue_url=queue.url,
            job_lease_seconds=5,
        )
        attach_queue(runtime)
        user = make_user(runtime)
        subs = [
            submit(runtime, user, data, f"db{i}")
            for i, data in enumerate(variants(synthetic["weak"], 30))
        ]
        env = {
            **os.environ,
            "MEDVIDBENCH_QUEUE_URL": queue.url,
            "MEDVIDBENCH_DATABASE_URL": postgres.url,
            "MEDVIDBENCH_JOB_LEASE_SECONDS": "5",
        }
        workers = [start_worker(runtime.data_dir, env) for _ in range(2)]

        try:
            wait_for_scored(runtime, 3, 60)
            postgres.restart()  # only the cluster this test started
            wait_for_scored(runtime, 30, 150)
        finally:
            for w in workers:
                w.send_signal(signal.SIGTERM)
            for w in workers:
                w.wait(timeout=30)
        with runtime.sessions() as session:
            statuses = list(session.scalars(select(Submission.status)))
            per_sub = [
                n
                for _, n in session.execute(
                    select(Evaluation.submission_id, func.count()).group_by(
                        Evaluation.submission_id
                    )
                )
            ]
            entries = session.scalar(select(func.count()).select_from(Entry))
        runtime.engine.dispose()
    assert statuses == ["scored"] * 30  # none lost
    assert per_sub == [1] * 30 and entries == 30  # none duplicated
    assert len(subs) == 30


def test_redis_restart_loses_queued_jobs_but_no_submission(
    tmp_path: Path, synthetic: dict[str, Path], postgres_url: str
) -> None:
    """A private Redis restarted with 12 jobs queued: the reaper re-enqueues every one."""
    import os
    import signal
    import time

    import redis

    from medvidbench.server.jobs import attach_queue
    from tests.server.conftest import variants
    from tests.server.private_services import private_redis

    with private_redis() as queue:
        runtime = build_runtime(
            tmp_path, postgres_url, synthetic["ground_truth"], queue_url=queue.url
        )
        attach_queue(runtime)
        user = make_user(runtime)
        for i, data in enumerate(variants(synthetic["weak"], 12)):
            submit(runtime, user, data, f"r{i}")  # 12 jobs wait in Redis
        assert redis.Redis.from_url(queue.url).dbsize() > 0
        queue.restart()  # every queued job is gone; only this test's Redis is touched
        assert redis.Redis.from_url(queue.url).dbsize() == 0
        env = {
            **os.environ,
            "MEDVIDBENCH_QUEUE_URL": queue.url,
            "MEDVIDBENCH_DATABASE_URL": postgres_url,
            "MEDVIDBENCH_JOB_REQUEUE_SECONDS": "1",
        }
        time.sleep(1.2)
        worker = start_worker(runtime.data_dir, env)
        try:
            wait_for_scored(runtime, 12, 90)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=30)
    with runtime.sessions() as session:
        statuses = list(session.scalars(select(Submission.status)))
        per_sub = [
            n
            for _, n in session.execute(
                select(Evaluation.submission_id, func.count()).group_by(Evaluation.submission_id)
            )
        ]
    assert statuses == ["scored"] * 12 and per_sub == [1] * 12


def test_worker_killed_mid_scoring_is_taken_over(tmp_path: Path) -> None:
    """SIGKILL a worker mid-scoring: a fresh worker takes the submission over once the lease
    expires and scores it exactly once.

    No wall-clock budget for the scoring itself: on a loaded machine (CI shares its cores) it
    takes minutes where it takes seconds alone, so the test waits as long as the second worker
    lives (up to a cap far above any measured run) and shows both workers' logs if it fails.
    """
    import os
    import signal
    import time

    from medvidbench.benchmarks.medvidbench.synth import write_synthetic
    from medvidbench.server.jobs import attach_queue

    # A set large enough that scoring garbage (every next-action answer embedded) takes seconds.
    files = write_synthetic(tmp_path / "big", samples=20_000, seed=3, archetypes=("garbage",))
    runtime = build_runtime(tmp_path, None, files["ground_truth"], job_lease_seconds=5)
    attach_queue(runtime)
    sub = submit(runtime, make_user(runtime), files["garbage"].read_bytes(), "Slow")
    env = {**os.environ, "MEDVIDBENCH_JOB_LEASE_SECONDS": "5"}
    logs = [tmp_path / "first.log", tmp_path / "second.log"]

    def status() -> str:
        with runtime.sessions() as session:
            return str(session.scalar(select(Submission.status).where(Submission.id == sub.id)))

    def worker_logs() -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-4000:]}" for p in logs if p.exists())

    first = start_worker(runtime.data_dir, env, log=logs[0])
    deadline = time.monotonic() + 60
    while status() != "scoring" and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)
    assert status() == "scoring", "scoring finished before the kill; the test set is too small"
    first.send_signal(signal.SIGKILL)
    first.wait()
    time.sleep(5.5)  # the lease expires
    second = start_worker(runtime.data_dir, env, log=logs[1])
    try:
        deadline = time.monotonic() + 900
        while status() != "scored" and second.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    with runtime.sessions() as session:
        row = session.get(Submission, sub.id)
        evaluations = session.scalar(select(func.count()).select_from(Evaluation))
    assert row is not None and row.status == "scored" and row.attempts == 2, worker_logs()
    assert evaluations == 1
