"""A real ``medvidbench serve`` process on a free loopback port, for tests that attack over HTTP."""

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

import httpx

CLI = [sys.executable, "-m", "medvidbench"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Live:
    url: str
    data: Path
    port: int
    startup: float
    process: subprocess.Popen[bytes]


def create_user(data: Path, name: str, password: str, *flags: str) -> None:
    subprocess.run(
        [*CLI, "users", "create", name, *flags, "--password-stdin", "--data-dir", str(data)],
        input=(password + "\n").encode(),
        check=True,
        capture_output=True,
    )


@contextmanager
def live_server(
    data: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> Iterator[Live]:
    """Start ``medvidbench serve`` on ``data`` and wait for its health check; stop it after."""
    port = free_port()
    # The judge is configured only by what a test passes, never by the developer's environment.
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "MEDVIDBENCH_JUDGE_", "MEDVIDBENCH_SIGNUP_"))
    }
    # One benchmark unless the test asks for more (MEDVIDBENCH_BENCHMARKS="" hosts every one).
    environment = {**inherited, "MEDVIDBENCH_BENCHMARKS": "medvidbench", **(env or {})}
    server = subprocess.Popen(
        [*CLI, "serve", "--port", str(port), "--data-dir", str(data), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
    )
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    while True:
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if server.poll() is not None or time.monotonic() - started > 180:  # a hang, not a load
            server.kill()
            out, err = server.communicate()
            raise RuntimeError(f"server did not start: {out.decode()} {err.decode()}")
        time.sleep(0.1)
    try:
        yield Live(url, data, port, time.monotonic() - started, server)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
