"""The server administration commands, as an operator runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "medvidbench", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_operator_walkthrough(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    data = ["--data-dir", str(tmp_path / "d")]
    assert run("db", "upgrade", *data).returncode == 0
    loaded = run("benchmarks", "load", str(synthetic["ground_truth"]), "--demo", *data)
    assert loaded.returncode == 0 and "600 samples" in loaded.stdout
    made = run(
        "users",
        "create",
        "opal",
        "--admin",
        "--password-stdin",
        *data,
        stdin="a-long-enough-password\n",
    )
    assert made.returncode == 0 and "role admin" in made.stdout
    token = run("tokens", "create", "opal", *data)
    assert token.returncode == 0 and token.stdout.strip().startswith("mvb_")
    assert "not shown again" in token.stderr
    assert run("tokens", "create", "nobody", *data).returncode == 2
    short = run("users", "create", "pat", "--password-stdin", *data, stdin="short\n")
    assert short.returncode == 2 and "12 characters" in short.stderr
    exported = run("export", "--board", "community", *data)
    assert exported.returncode == 0 and exported.stdout.startswith("rank,model,team")
    assert run("rescore", "--profile", "v9", *data).returncode == 2


@pytest.mark.parametrize(
    "command", ["db", "users", "tokens", "benchmarks", "worker", "rescore", "export"]
)
def test_server_commands_have_help(command: str) -> None:
    out = run(command, "--help")
    assert out.returncode == 0 and "Usage" in out.stdout


def test_serve_on_a_busy_port_says_so_before_starting(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "medvidbench",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(tmp_path / "data"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 2
    assert f"port {port} is in use on 127.0.0.1; try --port {port + 1}" in proc.stderr
    assert "Errno" not in proc.stderr and "Traceback" not in proc.stderr
    assert "MedVidBench leaderboard on" not in proc.stderr  # no banner for a server that is not up
