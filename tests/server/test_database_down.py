"""The database down, or unreachable without a word: pages answer 503 with a page saying so,
the API 503 with JSON, both with ``Retry-After``, never a 500; and no request waits longer than
the connect timeout (``MEDVIDBENCH_DATABASE_CONNECT_TIMEOUT``) for a database that never
answers. The cluster stopped here is a private one this test starts (never a shared server)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from medvidbench.core.config import Settings
from medvidbench.server.runtime import Runtime
from medvidbench.server.web import asgi
from medvidbench.server.web.app import create_app
from tests.server.conftest import build_runtime
from tests.server.private_services import private_postgres
from tests.web.conftest import login, token_for
from tests.web.test_api import upload


def _assert_unavailable(answer: httpx.Response, api: bool) -> None:
    status, text, headers = answer.status_code, answer.text, answer.headers
    assert status == 503, f"{status}: {text[:300]}"
    assert int(headers["retry-after"]) > 0
    if api:
        assert headers["content-type"].startswith("application/json")
        body = answer.json()
        assert body["error"] == "DatabaseUnavailableError"
        assert "database" in body["message"]
    else:
        assert headers["content-type"].startswith("text/html")
        assert "Not available right now" in text and "database cannot be reached" in text
        assert "Traceback" not in text and "psycopg" not in text  # details go to the log


def test_pages_and_the_api_answer_503_while_the_database_is_down(
    tmp_path: Path, synthetic: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with private_postgres() as pg:
        rt = build_runtime(tmp_path, pg.url, synthetic["ground_truth"])
        client = TestClient(create_app(rt), follow_redirects=False)
        login(client, rt)
        token = token_for(client)
        pages = ["/account", "/admin", "/b/medvidbench/submit"]
        api = ["/api/v1/submissions", "/api/v1/benchmarks"]
        before = {p: client.get(p).status_code for p in pages}
        assert all(s < 500 for s in before.values()), before

        pg.stop()
        try:
            for path in pages:
                _assert_unavailable(client.get(path), api=False)
            for path in api:
                answer = client.get(path, headers={"Authorization": f"Bearer {token}"})
                _assert_unavailable(answer, api=True)
            _assert_unavailable(upload(client, token, synthetic["strong"], "Down"), api=True)
            ready = client.get("/api/v1/health/ready")
            assert ready.status_code == 503 and ready.json()["failing"] == ["database"]
            # A web process starting meanwhile starts and reports not ready; a worker waits.
            env = {**_clean_env(), "MEDVIDBENCH_DATABASE_URL": pg.url}
            env["MEDVIDBENCH_BENCHMARKS"] = "medvidbench"  # the one whose test set is loaded
            env["MEDVIDBENCH_DATA_DIR"] = str(tmp_path / "worker")
            for key in ("MEDVIDBENCH_DATABASE_URL", "MEDVIDBENCH_SECRET_KEY"):
                monkeypatch.setenv(key, env.get(key, "s" * 40))
            monkeypatch.setenv("MEDVIDBENCH_DATA_DIR", str(tmp_path / "web"))
            with TestClient(asgi.app()) as started:
                assert started.get("/api/v1/health/ready").status_code == 503
            worker = subprocess.Popen(
                [sys.executable, "-m", "medvidbench", "worker"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            said = _Lines(worker)
            # the database comes back only once the worker has found it away (a worker slow to
            # start under load would otherwise first try it after it is back, and never say so)
            _wait(lambda: "the database is unreachable" in said.text or worker.poll() is not None,
                  120, said)  # fmt: skip
            time.sleep(2)  # a back-off or two
            assert worker.poll() is None, "the worker did not wait for the database"
        finally:
            pg.start()
        try:
            # its back-off doubles up to 60 s while the database is away: up to one more pause
            _wait(lambda: "the database is reachable again" in said.text, 180, said)
            time.sleep(3)  # then it consumes jobs (and stops cleanly on SIGTERM)
            assert worker.poll() is None, said.text[-2000:]
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
            said.thread.join(timeout=10)
        assert worker.returncode == 0, said.text[-2000:]
        assert "the database is unreachable" in said.text and "Traceback" not in said.text

        # back: the same pages answer as before, with no restart of the app
        assert {p: client.get(p).status_code for p in pages} == before
        answer = upload(client, token, synthetic["strong"], "Back")
        assert answer.status_code in (201, 202), answer.text
        rt.engine.dispose()


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEDVIDBENCH_", "OPENAI_"))}


class _Lines:
    """A process's standard error, collected on a thread as it is written."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.text = ""
        assert process.stderr is not None
        stream = process.stderr
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.text += line


def _wait(predicate: Callable[[], bool], seconds: float, said: _Lines | None = None) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out" + (
            f"; the process said:\n{said.text[-3000:]}" if said is not None else ""
        )
        time.sleep(0.2)


@pytest.fixture
def silent_database() -> Iterator[str]:
    """A URL whose server accepts the TCP connection and then never says a word (what a
    database behind a firewall that drops packets looks like to a client, or a hung server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])  # kept open, never answered
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    yield f"postgresql+psycopg://leaderboard@127.0.0.1:{port}/leaderboard"
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    listener.close()


def test_a_database_that_never_answers_costs_a_request_the_connect_timeout(
    tmp_path: Path, silent_database: str
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=silent_database,
        database_connect_timeout=2,
        secret_key="x" * 40,
    )
    rt = Runtime(settings)
    client = TestClient(create_app(rt), follow_redirects=False)
    for path, api in (("/", False), ("/api/v1/submissions", True)):
        started = time.monotonic()
        answer = client.get(path, headers={"Authorization": "Bearer mvb_nothing"} if api else {})
        took = time.monotonic() - started
        _assert_unavailable(answer, api=api)
        assert took < 2 + 3, f"{path} took {took:.1f} s with a 2 s connect timeout"
    started = time.monotonic()
    ready = client.get("/api/v1/health/ready")
    assert ready.status_code == 503 and ready.json()["checks"]["database"] == "unreachable"
    assert time.monotonic() - started < 2 + 3


def test_a_frozen_database_answers_every_read_503_within_the_deadline(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    """The database's processes stopped where they stand (connections open, nothing answered):
    every page and API read answers 503 within the request deadline, and the same pages answer
    again once it goes on, with no restart."""
    with private_postgres() as pg:
        rt = build_runtime(tmp_path, pg.url, synthetic["ground_truth"], request_deadline=3)
        client = TestClient(create_app(rt), follow_redirects=False)
        # Setting up (the first pages, a password hashed, a token) may take longer than 3 s on
        # a loaded CI machine (a cold /login once answered 503 there): the deadline under test
        # is set again once every page has answered (the app reads it on every request).
        tested = rt.settings
        rt.settings = tested.model_copy(update={"request_deadline": 60.0})
        login(client, rt)
        token = token_for(client)
        reads = [
            ("/", False),
            ("/b/medvidbench/about", False),
            ("/account", False),
            ("/b/medvidbench/board/community", False),
            ("/api/v1/submissions", True),
            ("/api/v1/benchmarks/medvidbench/boards/community", True),
        ]
        auth = {"Authorization": f"Bearer {token}"}
        before = {p: client.get(p, headers=auth if api else {}).status_code for p, api in reads}
        assert all(s == 200 for s in before.values()), before
        rt.settings = tested
        pg.freeze()
        try:
            for path, api in reads:
                started = time.monotonic()
                got = client.get(path, headers=auth if api else {})
                took = time.monotonic() - started
                assert got.status_code == 503, f"{path}: {got.status_code}"
                assert got.headers["retry-after"] == "30"
                assert "could not answer within 3 s" in got.text
                if api:
                    assert got.json()["error"] == "DeadlineExceeded"
                assert took < 3 + 2, f"{path} took {took:.1f} s with a 3 s deadline"
            assert client.get("/api/v1/health/live").status_code == 200  # no database needed
        finally:
            pg.thaw()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the held connections finish their queries
            now = {p: client.get(p, headers=auth if api else {}).status_code for p, api in reads}
            if now == before:
                break
            time.sleep(0.5)
        assert now == before
        rt.engine.dispose()


def test_the_connect_timeout_is_a_documented_positive_number() -> None:
    assert Settings().database_connect_timeout == 10
    with pytest.raises(ValueError):
        Settings(database_connect_timeout=0)
