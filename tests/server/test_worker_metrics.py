"""A worker on a machine with no web process serves its own job and judge metrics
(``medvidbench worker --metrics-port``), to the scrapers the metrics settings allow."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from medvidbench.core.config import Settings
from medvidbench.server.jobs import attach_queue
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.catalogue import load_benchmark
from medvidbench.server.services.submissions import submit
from tests.server.conftest import make_user, scored_count
from tests.server.test_metrics import TOKEN, samples, value


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(data: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "medvidbench", "worker", "--data-dir", str(data), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _scrape(url: str, **headers: str) -> httpx.Response:
    deadline = time.monotonic() + 60
    while True:
        try:
            return httpx.get(url, headers=headers, timeout=5)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_a_worker_serves_its_job_metrics_on_its_own_port(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    data = tmp_path / "data"
    runtime = Runtime(Settings(data_dir=data, benchmarks="medvidbench"))  # type: ignore[call-arg]
    runtime.upgrade_database()
    load_benchmark(runtime, synthetic["ground_truth"], demo=True)
    attach_queue(runtime)  # the SQLite queue of that data folder, consumed by the worker alone
    submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Watched from afar")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEDVIDBENCH_"))}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # a worker alone on its machine
    env.update(
        MEDVIDBENCH_METRICS_TOKEN=TOKEN,
        MEDVIDBENCH_JUDGE_ENABLED="false",
        MEDVIDBENCH_BENCHMARKS="medvidbench",
    )
    port = _free_port()
    worker = _worker(data, env, "--metrics-port", str(port), "--metrics-host", "127.0.0.1")
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        assert _scrape(url).status_code == 401  # neither the token nor an allowed address
        assert _scrape(url, Authorization="Bearer wrong").status_code == 401
        assert _scrape(f"http://127.0.0.1:{port}/other").status_code == 404
        deadline = time.monotonic() + 120
        key = {"step": "score", "benchmark": "medvidbench", "outcome": "done"}
        while True:  # the job's duration is observed after its commit: wait for it, not a while
            answer = _scrape(url, Authorization=f"Bearer {TOKEN}")
            if answer.status_code != 200 or time.monotonic() > deadline:
                break
            if value(samples(answer.text), "medvidbench_job_duration_seconds_count", **key):
                break
            time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGTERM)
        _, stderr = worker.communicate(timeout=30)
        runtime.engine.dispose()
    assert worker.returncode == 0, stderr[-2000:]
    assert f"metrics on port {port}" in stderr
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    found = samples(answer.text)
    assert scored_count(runtime) == 1
    assert value(found, "medvidbench_job_duration_seconds_count", **key) == 1
    # the database's and the queue's gauges are the web's to report, never counted twice
    assert not any(name.startswith("medvidbench_submissions") for name, _ in found)
    assert not any(name.startswith("medvidbench_queue_depth") for name, _ in found)


def test_a_worker_whose_metrics_would_be_public_refuses_to_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEDVIDBENCH_"))}
    env.update(MEDVIDBENCH_JUDGE_ENABLED="false", MEDVIDBENCH_WORKER_METRICS_PORT="0")
    data = tmp_path / "data"
    Runtime(Settings(data_dir=data)).upgrade_database()  # type: ignore[call-arg]
    worker = _worker(data, env)
    _, stderr = worker.communicate(timeout=120)
    assert worker.returncode != 0
    assert "MEDVIDBENCH_METRICS_TOKEN or MEDVIDBENCH_METRICS_ALLOW" in stderr
    assert "Traceback" not in stderr
