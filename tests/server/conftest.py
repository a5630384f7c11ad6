"""Server fixtures: a migrated runtime on SQLite and on PostgreSQL, jobs run synchronously.

PostgreSQL tests need the server on 127.0.0.1:5432 (database ``test``). Without it they are
skipped on a developer's machine, and fail under CI=true, where it must be up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from medvidbench.core.config import Settings
from medvidbench.server.jobs import attach_queue
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.accounts import create_user
from medvidbench.server.services.catalogue import load_benchmark
from medvidbench.server.store.db import transaction, upgrade
from medvidbench.server.store.models import User

PG_BASE = os.environ.get(
    "MEDVIDBENCH_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("MEDVIDBENCH_TEST_REDIS", "redis://127.0.0.1:6379")


def service_missing(what: str, exc: Exception) -> None:
    message = f"{what} is not reachable ({exc.__class__.__name__}: {exc})"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; CI must run these tests")
    pytest.skip(message)


def start_worker(
    data_dir: Path, env: dict[str, str], workers: int = 2, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """A real ``medvidbench worker`` process (its log in ``log`` when given)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "medvidbench",
            "worker",
            "--workers",
            str(workers),
            "--data-dir",
            str(data_dir),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w") if log is not None else subprocess.DEVNULL,
    )


def redis_queue(db: int) -> str:
    """An empty Redis database for one test's queue (skipped locally, failed in CI, if down)."""
    import redis

    url = f"{REDIS_URL}/{db}"
    try:
        redis.Redis.from_url(url).flushdb()
    except Exception as exc:
        service_missing("Redis", exc)
    return url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty schema in the test database, dropped afterwards."""
    schema = f"mvb_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_BASE, pool_pre_ping=True)  # survives a server restart in a test
    try:
        with admin.begin() as conn:
            conn.execute(text(f"CREATE SCHEMA {schema}"))
    except Exception as exc:
        service_missing("PostgreSQL", exc)
    yield f"{PG_BASE}?options=-csearch_path%3D{schema}"
    with admin.begin() as conn:
        conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    admin.dispose()


class HeldQueue:
    """A queue that keeps the jobs it is given and runs none (tests run the steps by hand)."""

    def __init__(self) -> None:
        self.jobs: list[tuple[object, ...]] = []

    def enqueue_score(self, submission_id: int) -> None:
        self.jobs.append(("score", submission_id))

    def enqueue_judge(self, submission_id: int) -> None:
        self.jobs.append(("judge", submission_id))

    def enqueue_rescore(self, submission_id: int, profile: str) -> None:
        self.jobs.append(("rescore", submission_id, profile))

    def check(self) -> None:
        """Always answers."""

    def depth(self) -> dict[str, int]:
        return {"pending": len(self.jobs), "scheduled": 0}


@pytest.fixture(scope="session", autouse=True)
def cheap_password_hashes() -> Iterator[None]:
    """Passwords hashed in the test process at argon2's cheapest cost: the library's hashing
    either way, at 0.19 CPU-seconds a hash by default and some 570 hashes a run. Servers and
    command lines the tests start as processes keep the real cost (what tests/web/
    test_login_load.py measures)."""
    from argon2 import PasswordHasher, profiles

    from medvidbench.server.services import accounts

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            accounts, "_hasher", lambda: PasswordHasher.from_parameters(profiles.CHEAPEST)
        )
        yield


def build_runtime(
    tmp_path: Path, database_url: str | None, ground_truth: Path, **settings: object
) -> Runtime:
    base = {
        "data_dir": tmp_path / "data",
        "database_url": database_url,
        "quota_per_day": 0,
        "quota_per_month": 0,
        "benchmarks": "medvidbench",  # these tests are about one benchmark's server
    }
    base.update(settings)
    runtime = Runtime(Settings(**base))  # type: ignore[arg-type]
    upgrade(runtime.engine)
    attach_queue(runtime, immediate=True)
    load_benchmark(runtime, ground_truth, demo=True)
    return runtime


@pytest.fixture(params=["sqlite", "postgresql"])
def runtime(
    request: pytest.FixtureRequest, tmp_path: Path, synthetic: dict[str, Path]
) -> Iterator[Runtime]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    rt = build_runtime(tmp_path, url, synthetic["ground_truth"])
    yield rt
    rt.engine.dispose()


def make_user(
    runtime: Runtime, name: str = "alice", role: str = "submitter", team: str | None = "Team A"
) -> User:
    with transaction(runtime.sessions) as session:
        return create_user(
            session, name, f"{name}-password-123", role=role, team=team, trusted_team=True
        )


@pytest.fixture
def alice(runtime: Runtime) -> User:
    return make_user(runtime)


@pytest.fixture
def admin(runtime: Runtime) -> User:
    return make_user(runtime, "root-admin", "admin", team=None)


def variants(path: Path, n: int) -> list[bytes]:
    """n distinct files (distinct hashes) with the same content otherwise."""
    records = json.loads(path.read_text())
    out = []
    for i in range(n):
        records[0]["prediction"] = f"variant {i}"
        out.append(json.dumps(records).encode())
    return out


def scored_count(runtime: Runtime) -> int:
    """How many submissions are scored now."""
    from sqlalchemy import func, select

    from medvidbench.server.store.models import Submission

    with runtime.sessions() as session:
        query = select(func.count()).select_from(Submission).where(Submission.status == "scored")
        return int(session.scalar(query) or 0)


def wait_for_scored(runtime: Runtime, count: int, seconds: float) -> None:
    """Wait until ``count`` submissions are scored (or the time is up; the test then checks).

    A database that is briefly unreachable (a fault test restarting it) is waited out.
    """
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if scored_count(runtime) >= count:
                return
        except Exception:
            pass  # the database is still coming back
        time.sleep(0.2)


def gt_of(runtime: Runtime, submission_id: int) -> str:
    """The sha256 of the stored test set a submission was scored on."""
    from sqlalchemy import select

    from medvidbench.server.store.models import Submission, TestSet

    with runtime.sessions() as session:
        return str(
            session.scalar(
                select(TestSet.gt_sha256)
                .join(Submission, Submission.benchmark_id == TestSet.id)
                .where(Submission.id == submission_id)
            )
        )
