"""A worker's log: every job line names the submission and its benchmark, in text and JSON."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from medvidbench.server.jobs import attach_queue
from medvidbench.server.services.submissions import submit
from tests.server.conftest import build_runtime, make_user, scored_count, start_worker


def worker_log(tmp_path: Path, synthetic: dict[str, Path], log_format: str) -> tuple[int, str]:
    """Score one submission with a real worker process; its id and the worker's log."""
    runtime = build_runtime(tmp_path, None, synthetic["ground_truth"])
    attach_queue(runtime)  # the embedded SQLite queue the worker consumes
    sub = submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Logged")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEDVIDBENCH_"))}
    env |= {
        "MEDVIDBENCH_LOG_FORMAT": log_format,
        "MEDVIDBENCH_JUDGE_ENABLED": "false",
        "MEDVIDBENCH_BENCHMARKS": "medvidbench",
    }
    log = tmp_path / "worker.log"
    worker = start_worker(runtime.data_dir, env, log=log)
    try:
        deadline = time.monotonic() + 120
        # the job's last lines come after its commit: wait for them, not a while
        last = f"score step of submission {sub.id}: done"
        while time.monotonic() < deadline:
            text = log.read_text() if log.exists() else ""
            if last in text and "executed in" in text:
                break
            time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        runtime.engine.dispose()
    assert scored_count(runtime) == 1
    return sub.id, log.read_text()


def test_json_lines_carry_the_submission(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    sid, text = worker_log(tmp_path, synthetic, "json")
    records = [json.loads(line) for line in text.splitlines() if line.strip()]  # each is JSON
    assert records and all({"time", "level", "logger", "message"} <= set(r) for r in records)
    job_lines = [r for r in records if "score" in r["message"] and "reap" not in r["message"]]
    # The queue's own lines (which name its task id), and ours: started, done.
    assert any(r["message"].startswith("Executing") for r in job_lines)
    assert any("executed in" in r["message"] for r in job_lines)
    assert any(r["message"].startswith(f"score step of submission {sid}: done") for r in job_lines)
    for record in job_lines:
        assert record.get("submission_id") == sid, record
        assert record.get("benchmark") == "medvidbench" and record.get("job") == "score"


def test_text_lines_carry_the_submission(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    sid, text = worker_log(tmp_path, synthetic, "text")
    lines = [line for line in text.splitlines() if ".score:" in line or "score step" in line]
    assert any("Executing" in line for line in lines) and len(lines) >= 4
    for line in lines:
        assert line.endswith(f"[submission {sid}, benchmark medvidbench, job score]"), line


@pytest.mark.parametrize("bad", ["xml"])
def test_an_unknown_log_format_stops_the_start(bad: str) -> None:
    from medvidbench.core.config import load_settings
    from medvidbench.core.errors import UsageError

    with pytest.raises(UsageError, match="MEDVIDBENCH_LOG_FORMAT"):
        load_settings(log_format=bad)


def test_a_failed_job_names_its_submission(capsys: pytest.CaptureFixture[str]) -> None:
    """The queue's traceback line names only its task id: it gets the submission's too."""
    import logging

    from huey import MemoryHuey

    from medvidbench.core.config import Settings
    from medvidbench.server.logs import configure_logging

    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging(
            Settings(log_format="json"),  # type: ignore[call-arg]
            lambda sid: {41: "medsg"}[sid],
        )
        huey = MemoryHuey("t", immediate=False, results=False)

        def broken(submission_id: int) -> None:
            raise RuntimeError("database unreachable")

        score = huey.task(name="score")(broken)
        task = score.s(41)
        huey.execute(task)
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    records = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    failed = [r for r in records if "Unhandled exception" in r["message"]]
    assert (
        failed
        and task.id in failed[0]["message"]
        and "database unreachable" in failed[0]["traceback"]
    )
    for record in records:
        assert record["submission_id"] == 41 and record["benchmark"] == "medsg", record


def test_web_processes_log_no_line_per_request(capsys: pytest.CaptureFixture[str]) -> None:
    """The web processes under uvicorn log warnings and errors (configuration.md): uvicorn's
    access logger, at INFO of its own, once wrote a JSON line for every request."""
    import logging

    from medvidbench.core.config import Settings
    from medvidbench.server.logs import configure_logging

    access = logging.getLogger("uvicorn.access")
    access.setLevel(logging.INFO)  # as uvicorn configures it before the app's factory runs
    handler = configure_logging(Settings(log_format="json"), level=logging.WARNING)  # type: ignore[call-arg]
    try:
        access.info('127.0.0.1:1 - "GET / HTTP/1.1" 200')
        logging.getLogger("uvicorn.error").warning("kept")
        lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
        assert [line["message"] for line in lines] == ["kept"]
    finally:
        logging.getLogger().removeHandler(handler)
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
            logging.getLogger(name).setLevel(logging.NOTSET)
