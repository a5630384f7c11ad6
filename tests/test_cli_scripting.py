"""What a scripting researcher relies on: records in memory, standard input, exit codes that
say what went wrong (and whether to try again), ``submit --json``, ``MEDVIDBENCH_SERVER``, and
output with no escape sequence under ``NO_COLOR`` or ``--no-color``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import medvidbench.cli.server  # noqa: F401  (registers submit)
from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth
from medvidbench.cli.main import app
from medvidbench.core.errors import ExitCode, UsageError
from medvidbench.library import evaluate, validate

runner = CliRunner()


def test_evaluate_takes_a_list_of_records(
    synthetic: dict[str, Path], synthetic_gt: GroundTruth
) -> None:
    records = json.loads(synthetic["strong"].read_text())
    truth = json.loads(synthetic["ground_truth"].read_text())
    from_file = evaluate(synthetic["strong"], synthetic_gt)
    assert evaluate(records, synthetic_gt).metrics == from_file.metrics
    assert evaluate(records, truth).metrics == from_file.metrics
    assert validate(records, synthetic_gt).report.complete
    with pytest.raises(UsageError, match="expected predictions as a file path, bytes, a list"):
        evaluate(42, synthetic_gt)


def test_a_dash_reads_standard_input(synthetic: dict[str, Path]) -> None:
    gt = str(synthetic["ground_truth"])
    data = synthetic["strong"].read_bytes()
    checked = runner.invoke(app, ["validate", "-", "--ground-truth", gt, "--json"], input=data)
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["source"] == "<stdin>"
    piped = runner.invoke(app, ["evaluate", "-", "--ground-truth", gt, "--json"], input=data)
    direct = runner.invoke(
        app, ["evaluate", str(synthetic["strong"]), "--ground-truth", gt, "--json"]
    )
    assert json.loads(piped.output)["metrics"] == json.loads(direct.output)["metrics"]


def test_exit_codes_tell_the_mistakes_apart(synthetic: dict[str, Path], tmp_path: Path) -> None:
    gt = str(synthetic["ground_truth"])
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": "x", "qa_type": "tal"}]')
    bad_gt = tmp_path / "gt.json"
    bad_gt.write_text("[{}]")
    cases = {
        ExitCode.INVALID_FILE: ["evaluate", str(bad), "--ground-truth", gt],
        ExitCode.INVALID_GROUND_TRUTH: ["validate", str(bad), "--ground-truth", str(bad_gt)],
        ExitCode.USAGE: ["evaluate", str(bad), "--ground-truth", gt, "--profile", "v9"],
    }
    for code, args in cases.items():
        result = runner.invoke(app, args)
        assert result.exit_code == code, (args, result.output)
    missing = runner.invoke(app, ["validate", str(tmp_path / "none.json"), "--ground-truth", gt])
    assert missing.exit_code == ExitCode.USAGE
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5, 6, 7]


# --- NO_COLOR ---------------------------------------------------------------------------------


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "medvidbench", *args],
        capture_output=True,
        text=True,
        env={**base, "FORCE_COLOR": "1", "COLUMNS": "120", **env},  # styled, as on a terminal
        timeout=120,
    )


@pytest.mark.parametrize(
    ("flag", "env"), [((), {"NO_COLOR": "1"}), (("--no-color",), {}), ((), {"NO_COLOR": "yes"})]
)
def test_no_color_removes_every_escape(
    synthetic: dict[str, Path], tmp_path: Path, flag: tuple[str, ...], env: dict[str, str]
) -> None:
    gt = str(synthetic["ground_truth"])
    partial = str(synthetic["partial"])
    bad_gt = tmp_path / "gt.json"
    bad_gt.write_text("[{}]")
    styled = _cli("validate", partial, "--ground-truth", gt)
    assert "\x1b[1m" in styled.stdout  # bold: what NO_COLOR alone used to leave behind
    for args in (
        ("validate", partial, "--ground-truth", gt),
        ("validate", partial, "--ground-truth", str(bad_gt)),  # the error message
    ):
        plain = _cli(*flag, *args, **env)
        assert "verdict" in plain.stdout or "error:" in plain.stderr
        assert "\x1b" not in plain.stdout + plain.stderr, (plain.stdout + plain.stderr)[:300]


# --- submit against a server on loopback ------------------------------------------------------


class _Canned(BaseHTTPRequestHandler):
    """Answers every upload with the status and body the test set on the server."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, body, headers = self.server.answer  # type: ignore[attr-defined]
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        data = json.dumps(body).encode()
        self.send_response(status)
        for k, v in {"Content-Type": "application/json", **headers}.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _submit(httpd: ThreadingHTTPServer, file: Path, *extra: str) -> Any:
    env = {
        "MEDVIDBENCH_SERVER": f"http://127.0.0.1:{httpd.server_address[1]}",
        "MEDVIDBENCH_TOKEN": "mvb_test",
    }
    return runner.invoke(app, ["submit", str(file), "--model-name", "m", *extra], env=env)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (429, ExitCode.RETRY_LATER),
        (503, ExitCode.RETRY_LATER),
        (502, ExitCode.RETRY_LATER),  # a proxy whose server is down or restarting
        (504, ExitCode.RETRY_LATER),
        (409, ExitCode.REFUSED),
        (422, ExitCode.REFUSED),
        (403, ExitCode.REFUSED),
        (500, ExitCode.FAILURE),
    ],
)
def test_submit_exit_codes_say_whether_to_retry(
    server: ThreadingHTTPServer, synthetic: dict[str, Path], status: int, code: int
) -> None:
    body = {"error": "X", "message": f"refused with {status}", "retry_at": "2030-01-01T00:00:00"}
    server.answer = (status, body, {"Retry-After": "120"})  # type: ignore[attr-defined]
    result = _submit(server, synthetic["strong"], "--json")
    assert result.exit_code == code, result.output
    assert server.seen == ["/api/v1/submissions"]  # type: ignore[attr-defined]
    printed = json.loads(result.stdout)
    assert printed == body  # the server's own error, for a script to read (retry_at)
    if status in (429, 503):
        assert "(retry after 120 s)" in result.stderr


def test_a_server_that_does_not_answer_means_try_again(synthetic: dict[str, Path]) -> None:
    """Nothing listening (a restart, a network outage): 7; a URL that cannot work: 2."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    for server, code, said in (
        (f"http://127.0.0.1:{port}", ExitCode.RETRY_LATER, "try again later"),
        ("ftp://example.org", ExitCode.USAGE, "is not a server URL"),
    ):
        env = {"MEDVIDBENCH_SERVER": server, "MEDVIDBENCH_TOKEN": "mvb_test"}
        result = runner.invoke(
            app, ["submit", str(synthetic["strong"]), "--model-name", "m"], env=env
        )
        assert result.exit_code == code, result.output
        assert said in result.stderr and "Traceback" not in result.output


def test_an_empty_token_is_a_usage_error_not_a_network_one(synthetic: dict[str, Path]) -> None:
    """``--token ""`` once reached httpx as an illegal header and was reported as a server
    that cannot be reached (7, try again later); nothing is sent."""
    for token in ("", "   ", "mvb_\nsecond-line"):
        env = {"MEDVIDBENCH_SERVER": "http://127.0.0.1:9", "MEDVIDBENCH_TOKEN": "unused"}
        args = ["submit", str(synthetic["strong"]), "--model-name", "m", "--token", token]
        result = runner.invoke(app, args, env=env)
        assert result.exit_code == ExitCode.USAGE, result.output
        assert "--token (or MEDVIDBENCH_TOKEN) is empty or not a token" in result.stderr


def test_submit_json_prints_the_servers_result(
    server: ThreadingHTTPServer, synthetic: dict[str, Path]
) -> None:
    created = {"id": 7, "url": "/submissions/7", "status": "received", "warnings": ["w1"]}
    server.answer = (202, created, {})  # type: ignore[attr-defined]
    result = _submit(server, synthetic["strong"], "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == created
    assert "accepted as submission 7" in result.stderr and "w1" in result.stderr
