"""Degrade, never lie, never lose: readiness names the part that is down; an upload while the
job queue is down is stored, answered 202 with its id, and scored once the queue is back; a
worker backs off with one line per back-off; a web or worker process refuses a database that
is not at this code's migration; ``db upgrade`` says what it did."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from medvidbench.core.config import Settings
from medvidbench.core.errors import NotMigratedError
from medvidbench.server.jobs import attach_queue
from medvidbench.server.runtime import Runtime
from medvidbench.server.store.db import head_revision
from medvidbench.server.store.models import SubmissionEvent
from medvidbench.server.web.app import create_app
from tests.server.conftest import build_runtime, start_worker
from tests.server.private_services import private_redis
from tests.server.test_workers import status, wait_for
from tests.web.conftest import login, token_for
from tests.web.test_api import upload

CLI = [sys.executable, "-m", "medvidbench"]


def _env(data: Path, **settings: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEDVIDBENCH_", "OPENAI_"))}
    return {
        **base,
        "MEDVIDBENCH_DATA_DIR": str(data),
        "MEDVIDBENCH_BENCHMARKS": "medvidbench",
        **settings,
    }


def test_an_upload_while_the_queue_is_down_is_kept_and_scored_once_it_is_back(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    with private_redis() as redis:
        rt = build_runtime(
            tmp_path, None, synthetic["ground_truth"], queue_url=redis.url, job_requeue_seconds=0.5
        )
        attach_queue(rt)  # the real Redis queue, consumed by no one yet
        with TestClient(create_app(rt), follow_redirects=False) as client:
            assert client.get("/api/v1/health/ready").json()["status"] == "ready"
            login(client, rt)
            token = token_for(client)
            redis.stop()

            ready = client.get("/api/v1/health/ready")
            assert ready.status_code == 503
            assert ready.json()["failing"] == ["queue"]
            assert ready.json()["checks"] == {"database": "ok", "queue": "unreachable"}
            assert client.head("/api/v1/health/ready").status_code == 503
            assert client.head("/api/v1/health/live").status_code == 200
            assert client.head("/api/v1/health").status_code == 200

            answer = upload(client, token, synthetic["strong"], "Kept-While-Down")
            assert answer.status_code == 202, answer.text
            body = answer.json()
            assert body["status"] == "queued" and "queue is down" in body["note"]
            # the submitter finds it: in their list and on its page, with the wait in its log
            mine = client.get("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"})
            assert body["id"] in [s["id"] for s in mine.json()]
            with rt.sessions() as session:
                kinds = session.scalars(
                    select(SubmissionEvent.kind).where(SubmissionEvent.submission_id == body["id"])
                ).all()
            assert "waiting" in kinds

        redis.start()
        env = _env(
            rt.data_dir, MEDVIDBENCH_QUEUE_URL=redis.url, MEDVIDBENCH_JOB_REQUEUE_SECONDS="0.5"
        )
        worker = start_worker(rt.data_dir, env)  # its reaper queues what waited
        try:
            wait_for(lambda: status(rt, body["id"]) == "scored", timeout=120)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    rt.engine.dispose()


def test_a_worker_backs_off_with_one_line_per_back_off(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    with private_redis() as redis:
        rt = build_runtime(tmp_path, None, synthetic["ground_truth"], queue_url=redis.url)
        log = tmp_path / "worker.log"
        worker = start_worker(
            rt.data_dir, _env(rt.data_dir, MEDVIDBENCH_QUEUE_URL=redis.url), 4, log
        )
        try:
            time.sleep(3)  # started, consuming
            redis.stop()
            # counted from the first back-off, however long a loaded machine took to start it
            wait_for(lambda: "the job queue is unreachable" in log.read_text(), timeout=60)
            time.sleep(20)
            assert worker.poll() is None, log.read_text()[-2000:]
            text = log.read_text()
            down = [ln for ln in text.splitlines() if "the job queue is unreachable" in ln]
            assert "Traceback" not in text, text[-3000:]
            # back-offs of 1, 2, 4, 8 s: four or five lines in 20 s, whatever the threads
            assert 3 <= len(down) <= 6, text[-3000:]
            redis.start()
            wait_for(lambda: "the job queue is reachable again" in log.read_text(), timeout=60)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    rt.engine.dispose()


def _fresh_runtime(tmp_path: Path, postgres_url: str) -> Runtime:
    from medvidbench.core.config import Settings

    return Runtime(Settings(data_dir=tmp_path / "data", database_url=postgres_url))


def test_an_unmigrated_database_stops_web_and_worker_and_ready_names_it(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from medvidbench.server.web import asgi

    env = _env(tmp_path / "data", MEDVIDBENCH_DATABASE_URL=postgres_url)
    for key in ("MEDVIDBENCH_DATA_DIR", "MEDVIDBENCH_DATABASE_URL"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.setenv("MEDVIDBENCH_SECRET_KEY", "s" * 40)
    with pytest.raises(NotMigratedError, match=r"has no schema.*run 'medvidbench db upgrade'"):
        asgi.app()

    worker = subprocess.run([*CLI, "worker"], env=env, capture_output=True, text=True, timeout=120)
    assert worker.returncode == 2
    assert "run 'medvidbench db upgrade'" in worker.stderr and "Traceback" not in worker.stderr

    rt = _fresh_runtime(tmp_path, postgres_url)
    attach_queue(rt)
    with TestClient(create_app(rt)) as client:
        ready = client.get("/api/v1/health/ready")
        assert ready.status_code == 503 and ready.json()["failing"] == ["database"]
        assert "medvidbench db upgrade" in ready.json()["checks"]["database"]
        assert client.get("/api/v1/health/live").status_code == 200

    upgrade = [*CLI, "db", "upgrade"]
    made = subprocess.run(upgrade, env=env, capture_output=True, text=True, timeout=300)
    assert made.stdout.strip() == f"created the schema at revision {head_revision()}", made.stderr
    again = subprocess.run(upgrade, env=env, capture_output=True, text=True, timeout=300)
    assert again.stdout.strip() == f"the schema is already at revision {head_revision()}"
    with TestClient(create_app(rt)) as client:
        assert client.get("/api/v1/health/ready").json() == {
            "status": "ready",
            "failing": [],
            "checks": {"database": "ok", "queue": "ok"},
        }
        # no test set loaded yet: what the server holds is null, not an error
        info = client.get("/api/v1/health")
        assert info.status_code == 200 and info.json()["benchmark"] is None
        assert isinstance(asgi.app(), type(client.app))
    rt.engine.dispose()


def test_db_upgrade_names_both_revisions(tmp_path: Path, postgres_url: str) -> None:
    from alembic import command
    from alembic.config import Config

    from medvidbench.server.store.db import MIGRATIONS

    rt = _fresh_runtime(tmp_path, postgres_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with rt.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0007")
    with pytest.raises(NotMigratedError, match="is at revision 0007"):
        rt.check_database()
    env = _env(tmp_path / "data", MEDVIDBENCH_DATABASE_URL=postgres_url)
    done = subprocess.run(
        [*CLI, "db", "upgrade"], env=env, capture_output=True, text=True, timeout=300
    )
    assert re.fullmatch(
        rf"upgraded the schema from revision 0007 to {head_revision()}\n", done.stdout
    ), done.stderr
    rt.engine.dispose()


def test_a_database_a_later_release_migrated_is_named_so(tmp_path: Path) -> None:
    """Not 'run db upgrade' (which then failed with alembic's traceback): the revision is
    unknown to this code, so a later release made it; both the start and db upgrade say so."""
    from sqlalchemy import text

    rt = Runtime(Settings(data_dir=tmp_path / "data"))  # type: ignore[call-arg]
    rt.upgrade_database()
    with rt.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(NotMigratedError, match="revision 9999, which this version of medvidbench"):
        rt.check_database()
    done = subprocess.run(
        [*CLI, "db", "upgrade"],
        env=_env(tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "a later release migrated it" in done.stderr and "Traceback" not in done.stderr
    rt.engine.dispose()
