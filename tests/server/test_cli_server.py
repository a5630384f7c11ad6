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
    assert loaded.returncode == 0 and "600 test questions" in loaded.stdout
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


def _no_judge_env() -> dict[str, str]:
    import os

    names = (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "MEDVIDBENCH_JUDGE_API_KEY",
        "MEDVIDBENCH_JUDGE_BASE_URL",
        "MEDVIDBENCH_JUDGE_ENABLED",
    )
    return {k: v for k, v in os.environ.items() if k not in names}


@pytest.mark.parametrize("command", [["serve", "--port", "1"], ["worker"]])
def test_a_judge_switched_on_without_an_endpoint_stops_at_startup(
    tmp_path: Path, command: list[str]
) -> None:
    env = {**_no_judge_env(), "MEDVIDBENCH_JUDGE_ENABLED": "true"}
    proc = subprocess.run(
        [sys.executable, "-m", "medvidbench", *command, "--data-dir", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "MEDVIDBENCH_JUDGE_ENABLED is true but no judge is configured" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_serve_and_health_say_whether_the_judge_is_on(tmp_path: Path) -> None:
    import httpx

    from medvidbench.core.judge.fake_server import FakeJudgeServer
    from tests.web.live import live_server

    with live_server(tmp_path / "off", env=_no_judge_env()) as off:
        health = httpx.get(f"{off.url}/api/v1/health").json()
    assert (
        health["judge"]["enabled"] is False and "no judge configured" in health["judge"]["reason"]
    )
    banner = off.process.stderr.read().decode() if off.process.stderr else ""
    assert "judge: off (no judge configured" in banner

    with FakeJudgeServer() as judge:
        env = {**_no_judge_env(), "OPENAI_BASE_URL": judge.url, "OPENAI_API_KEY": "secret-key-1"}
        with live_server(tmp_path / "on", env=env) as on:
            health = httpx.get(f"{on.url}/api/v1/health").json()
    assert health["judge"] == {  # the endpoint is for administrators only
        "enabled": True,
        "endpoint": None,
        "model": "gpt-4.1",
        "reason": "a judge is configured",
    }
    banner = on.process.stderr.read().decode() if on.process.stderr else ""
    assert f"judge: on, model gpt-4.1 at {judge.url}" in banner
    assert "secret-key-1" not in banner and "secret-key-1" not in str(health)


def test_every_command_runs_matrix_products_on_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenBLAS's own threads spinning on a busy machine made a worker's scoring slower several
    times over (test_faults' take-over: 113 s with two, 43 s with one) and an evaluate 3.8x;
    every command asks for one thread before numpy loads, and an operator's own value is kept
    whole."""
    import os

    from medvidbench.core.blas import VARIABLES, one_blas_thread

    code = (
        "import os, sys\n"
        "from medvidbench.cli.main import main\n"
        "sys.argv = ['medvidbench', 'synth', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('MKL_NUM_THREADS'), "
        "os.environ.get('OMP_NUM_THREADS'))\n"
    )
    clean = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    for given, want in (({}, "1 1 None"), ({"OMP_NUM_THREADS": "3"}, "None None 3")):
        done = subprocess.run(
            [sys.executable, "-c", code], env={**clean, **given}, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == want
    # too late once numpy is loaded (this process has it): nothing is changed
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert "numpy" in sys.modules and not one_blas_thread()
    assert not any(name in os.environ for name in VARIABLES)
