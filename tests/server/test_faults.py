"""Faults: the judge endpoint failing for a while, the database restarting under workers."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from medvidbench.core.judge.fake_server import FakeJudgeServer
from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.details import submission_view
from medvidbench.server.services.evaluations import request_rejudge
from medvidbench.server.services.exports import export_board
from medvidbench.server.services.steps import stale
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
    """The judge's first 30 answers are errors: the first judge step finds it down and stores
    nothing; the next one (the retry) judges every pair, and judging again later asks nothing
    (every pair is cached)."""
    with FakeJudgeServer(outage_requests=30) as judge:
        runtime = judged_runtime(tmp_path, synthetic, judge.url)
        sub = submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Outage")
        with runtime.sessions() as session:
            assert session.get(Submission, sub.id).status == "scored"  # type: ignore[union-attr]
        runtime.queue.judge(sub.id)  # type: ignore[attr-defined]  # the retry, run now
        with runtime.sessions() as session:
            row = session.get(Submission, sub.id)
            assert row is not None and row.status == "complete"
            judged = session.scalar(
                select(Evaluation).where(
                    Evaluation.submission_id == sub.id, Evaluation.judge_id != ""
                )
            )
        assert judged is not None and judged.judge["failures"] == 0
        assert judged.metrics["vs_llm"] is not None
        asked = judge.requests
        # Re-judging later asks nothing again: every pair is cached.
        assert request_rejudge(runtime, sub.id)
        runtime.queue.judge(sub.id)  # type: ignore[attr-defined]
        assert judge.requests == asked
        with runtime.sessions() as session:
            assert session.get(Submission, sub.id).status == "complete"  # type: ignore[union-attr]
            assert session.scalar(select(func.count()).select_from(Evaluation)) == 2


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("outage", ["nothing-listening", "every-answer-500"])
def test_a_judge_outage_publishes_no_number_and_is_judged_when_back(
    outage: str, tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    """#32 item 4: with the judge on and nothing answering, the submission ended `complete`
    with DVC_llm 0.000 on the public board. Now: nothing judged is stored, the judged metrics
    stay null everywhere (board, API, export, average rank), everyone reads that the judge
    failed, the judge step is tried again (not before its back-off), and once the judge
    answers the submission is judged and complete."""
    down = FakeJudgeServer(rate_500=1.0)
    url = f"http://127.0.0.1:{_free_port()}/v1" if outage == "nothing-listening" else down.url
    with down:
        runtime = judged_runtime(tmp_path, synthetic, url)
        runtime.settings.judge_max_attempts = 2
        sub = submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Down")
        with runtime.sessions() as session:
            row = session.get(Submission, sub.id)
            assert row is not None and row.status == "scored" and row.error
            assert "did not answer" in row.error
            judged = session.scalar(
                select(Evaluation).where(
                    Evaluation.submission_id == sub.id, Evaluation.judge_id != ""
                )
            )
        assert judged is None  # nothing judged was stored
        if outage == "every-answer-500":
            # the judge is found down after a few requests, not asked every pair x every retry
            assert down.requests <= (16 + 4) * 2, down.requests

    [entry] = [r for r in board_rows(runtime, "community") if r.submission_id == sub.id]
    assert entry.metrics["dvc_llm"] is None and entry.metrics["vs_llm"] is None
    assert entry.metrics["tag_miou_03"] is not None  # rule-based metrics unaffected
    exported = json.loads(export_board(runtime, "community", "json"))
    assert all(r["metrics"]["dvc_llm"] is None for r in exported)
    view = submission_view(runtime, sub.id, None)  # a visitor
    assert view["judge_failed"] is True
    assert any(
        e["kind"] == "judge failed" and "did not answer" in e["message"] for e in view["log"]
    )

    # not queued again before its back-off; then once the judge answers, judged and complete
    assert sub.id not in [sid for sid, _ in stale(runtime)]
    with runtime.sessions() as session:
        session.execute(
            update(Submission)
            .where(Submission.id == sub.id)
            .values(
                lease_until=datetime.now(UTC) - timedelta(seconds=1),
                scored_at=datetime.now(UTC) - timedelta(hours=1),
            )
        )
        session.commit()
    assert (sub.id, "judge") in stale(runtime)
    with FakeJudgeServer() as back:
        runtime.settings.judge_base_url = back.url
        runtime.queue.judge(sub.id)  # type: ignore[attr-defined]
    with runtime.sessions() as session:
        row = session.get(Submission, sub.id)
        assert row is not None and row.status == "complete" and row.error is None
    [entry] = [r for r in board_rows(runtime, "community") if r.submission_id == sub.id]
    assert entry.metrics["dvc_llm"] is not None and entry.metrics["vs_llm"] is not None


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
