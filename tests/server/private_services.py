"""Private PostgreSQL and Redis servers for fault tests, which restart only what they started.

A fault test must never stop or restart a service other programs use. These start their own:
a PostgreSQL cluster made by ``initdb`` in a temporary folder, and a ``redis-server`` on a free
port, each on 127.0.0.1 only, each removed afterwards. PostgreSQL refuses to run as root, so as
root the cluster belongs to the ``postgres`` system user (as Debian's own clusters do).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.server.conftest import service_missing


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _binary(name: str) -> str:
    """A PostgreSQL or Redis program: on PATH, else in Debian's versioned folder."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin")) if name != "redis-server" else []
    for folder in reversed(versions):
        if (folder / name).exists():
            return str(folder / name)
    service_missing(f"{name} (to start a private server)", RuntimeError("not installed"))
    raise AssertionError("unreachable")


@dataclass
class PrivatePostgres:
    url: str
    data: Path
    port: int
    _as: list[str]
    options: str = ""

    def _ctl(self, *args: str) -> None:
        subprocess.run(
            [*self._as, _binary("pg_ctl"), "-D", str(self.data), "-w", "-t", "60", *args],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def restart(self) -> None:
        """Restart this private cluster (fast shutdown: every connection is dropped)."""
        self._ctl("-m", "fast", "-l", str(self.data / "log"), "restart")

    def stop(self) -> None:
        """Stop this private cluster (fast shutdown); :meth:`start` brings it back."""
        self._ctl("-m", "fast", "stop")

    def start(self) -> None:
        """Start this private cluster again with the options it was first started with."""
        self._ctl("-o", self.options, "-l", str(self.data / "log"), "start")

    def _processes(self) -> list[int]:
        """The postmaster and every process it started."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(
            ["pgrep", "-P", str(postmaster)], capture_output=True, text=True, check=False
        ).stdout.split()
        return [postmaster, *map(int, children)]

    def freeze(self) -> None:
        """Stop this cluster's processes where they stand (SIGSTOP): connections stay open and
        their sockets are acknowledged by the kernel, but no query is answered (a partition,
        a hung server). :meth:`thaw` lets them go on."""
        for pid in self._processes():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self._processes():
            os.kill(pid, signal.SIGCONT)


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A throwaway PostgreSQL cluster on a free loopback port, with trust authentication."""
    run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if run_as and shutil.which("runuser") is None:
        service_missing("runuser (to run a private PostgreSQL as root)", RuntimeError("missing"))
    folder = Path(tempfile.mkdtemp(prefix="mvb-pg-"))
    data, port = folder / "data", _free_port()
    if run_as:
        shutil.chown(folder, "postgres", "postgres")
    server = PrivatePostgres(
        f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", data, port, run_as
    )
    try:
        subprocess.run(
            [
                *run_as,
                _binary("initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        server.options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        server.start()
        yield server
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*run_as, _binary("pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class PrivateRedis:
    url: str
    port: int
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                _binary("redis-server"),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if redis.Redis(host="127.0.0.1", port=self.port).ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("the private redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def restart(self) -> None:
        """Stop and start again on the same port: it keeps nothing, so queued jobs are lost."""
        self.stop()
        self.start()


@contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    """A throwaway ``redis-server`` on a free loopback port, keeping nothing on disk."""
    port = _free_port()
    server = PrivateRedis(f"redis://127.0.0.1:{port}/0", port)
    server.start()
    try:
        yield server
    finally:
        server.stop()
