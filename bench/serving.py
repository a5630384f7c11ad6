"""What the benchmarks share: a synthetic set, an account with a token, a real server.

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
