"""What the benchmarks share: a synthetic set, an account with a token, a real server, and the
embedded default in the bench's own process.

Each runs the project's own command line in fresh processes, as a user would, with an
environment free of the developer's judge and server settings.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

CLI = [sys.executable, "-m", "medvidbench"]


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without judge (OPENAI_*) or MEDVIDBENCH_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEDVIDBENCH_"))}
    env.update(extra)
    return env


def synth(folder: Path, samples: int = 6245) -> None:
    """``medvidbench synth`` into ``folder`` (seed 0)."""
    subprocess.run(
        [*CLI, "synth", "--samples", str(samples), "--seed", "0", "--out-dir", str(folder)],
        check=True,
        capture_output=True,
    )


def account_with_token(data: Path, env: dict[str, str]) -> str:
    """Create the submitter ``bench`` in the data folder and return a new API token."""
    subprocess.run(
        [*CLI, "users", "create", "bench", "--password-stdin", "--data-dir", str(data)],
        input=b"bench-password-123\n",
        check=True,
        capture_output=True,
        env=env,
    )
    created = subprocess.run(
        [*CLI, "tokens", "create", "bench", "--data-dir", str(data)],
        check=True,
        capture_output=True,
        env=env,
        text=True,
    )
    return created.stdout.split()[-1]


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    started_in: float  # seconds from launch to the first healthy answer


@contextmanager
def serve(
    data: Path, env: dict[str, str], timeout: float = 120, args: tuple[str, ...] = ()
) -> Iterator[Server]:
    """``medvidbench serve`` (with ``args``) on a free loopback port, once its health check
    answers; stopped afterwards."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [*CLI, "serve", "--port", str(port), "--data-dir", str(data), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    launched = time.perf_counter()
    try:
        while True:
            try:
                if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.perf_counter() - launched > timeout or process.poll() is not None:
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        yield Server(url, process, time.perf_counter() - launched)
    finally:
        process.terminate()
        process.wait(timeout=60)


@dataclass
class Embedded:
    """A server's services in this process: its runtime and the submitter ``bench``."""

    runtime: Any
    user: Any

    def wait(self, submission_id: int, until: tuple[str, ...]) -> str:
        """Poll a submission's status until it is one of ``until``; that status."""
        from sqlalchemy import select

        from medvidbench.server.store.models import Submission

        while True:
            with self.runtime.sessions() as session:
                status = session.scalar(
                    select(Submission.status).where(Submission.id == submission_id)
                )
            if status in until:
                return str(status)
            time.sleep(0.005)


@contextmanager
def embedded(data: Path, ground_truth: Path, **settings: Any) -> Iterator[Embedded]:
    """The embedded default in this process (SQLite database and queue, two consumer threads),
    ``ground_truth`` loaded as the demo set and the submitter ``bench`` created, no quotas;
    ``settings`` are more :class:`~medvidbench.core.config.Settings`. The consumer stops
    (gracefully) afterwards."""
    from medvidbench.core.config import Settings
    from medvidbench.server.jobs import attach_queue, start_embedded_consumer
    from medvidbench.server.runtime import Runtime
    from medvidbench.server.services.accounts import create_user
    from medvidbench.server.services.catalogue import load_benchmark
    from medvidbench.server.store.db import transaction, upgrade

    runtime = Runtime(
        Settings(data_dir=data, quota_per_day=0, quota_per_month=0, **settings)  # type: ignore[arg-type]
    )
    upgrade(runtime.engine)
    load_benchmark(runtime, ground_truth, demo=True)
    with transaction(runtime.sessions) as session:
        user = create_user(session, "bench", "bench-password-123", team="Bench")
    attach_queue(runtime)
    consumer = start_embedded_consumer(runtime, workers=2)
    try:
        yield Embedded(runtime, user)
    finally:
        consumer.stop(graceful=True)


# the machine's test database (MEDVIDBENCH_TEST_POSTGRES names another)
POSTGRES = os.environ.get(
    "MEDVIDBENCH_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


@contextmanager
def postgres_schema(prefix: str) -> Iterator[str]:
    """A URL of the test database whose tables go into a fresh schema of their own, dropped
    afterwards (a bench never touches another's tables)."""
    import uuid

    from sqlalchemy import create_engine, text

    schema = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(POSTGRES)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{POSTGRES}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def _spin() -> None:
    while True:
        pass


@contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """``count`` processes spinning on a core each for the block (a busy shared machine)."""
    import multiprocessing

    busy = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(count)]
    for p in busy:
        p.start()
    try:
        yield
    finally:
        for p in busy:
            p.terminate()
