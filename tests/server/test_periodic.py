"""What docs/deploy.md says runs periodically, run: the workers' reaper every minute, and the
nightly backup (its cron line and its systemd timer, as written there) keeping 14 days."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from medvidbench.core.config import Settings
from medvidbench.core.envfile import read_environment_file
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.catalogue import load_benchmark
from medvidbench.server.services.submissions import submit
from tests.server.conftest import HeldQueue, build_runtime, make_user
from tests.server.deploy_doc import cron_line, ini_block
from tests.server.test_backups import fresh, snapshot
from tests.server.test_workers import status

BIN = Path(sys.executable).parent
DAY = 24 * 3600


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEDVIDBENCH_", "OPENAI_"))}


def test_a_running_worker_reaps_a_submission_that_lost_its_job_within_a_minute(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    """Not at its start (the submission is younger than the re-queue age then): by the
    periodic reap a minute later, with the worker running throughout."""
    data = tmp_path / "data"
    settings = Settings(data_dir=data, benchmarks="medvidbench", job_requeue_seconds=15)  # type: ignore[call-arg]
    runtime = Runtime(settings)
    runtime.upgrade_database()
    load_benchmark(runtime, synthetic["ground_truth"], demo=True)
    runtime.queue = HeldQueue()  # the job is lost: the queue never sees it
    sid = submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Lost job").id
    env = {
        **_clean_env(),
        "MEDVIDBENCH_JUDGE_ENABLED": "false",
        "MEDVIDBENCH_BENCHMARKS": "medvidbench",
        "MEDVIDBENCH_JOB_REQUEUE_SECONDS": "15",
    }
    started = time.monotonic()
    worker = subprocess.Popen(
        [sys.executable, "-m", "medvidbench", "worker", "--data-dir", str(data)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(8)
        assert status(runtime, sid) == "queued", "reaped at start, younger than the re-queue age"
        # old enough, the next minute's reap, and slack for a loaded machine (this only
        # catches a reap that never comes)
        deadline = started + 15 + 60 + 120
        while status(runtime, sid) != "scored" and time.monotonic() < deadline:
            assert worker.poll() is None, worker.communicate()[1][-2000:]
            time.sleep(0.5)
        assert status(runtime, sid) == "scored"
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
        runtime.engine.dispose()


def _server_env_file(path: Path, data: Path) -> Path:
    """An /etc/medvidbench/env of a server, in the EnvironmentFile format (KEY=value), with
    values a shell would run rather than read (a shell's ``.`` once stopped the line on the
    second: no archive)."""
    path.write_text(
        f"# the service's settings\nMEDVIDBENCH_DATA_DIR={data}\n"
        "MEDVIDBENCH_METRICS_ALLOW=10.0.0.0/8, ::1\n"
        'MEDVIDBENCH_JUDGE_MODEL="a$b&c;d"\n'
        "MEDVIDBENCH_BENCHMARKS=medvidbench\n",
        encoding="utf-8",
    )
    return path


def _local(text: str, env_file: Path, backups: Path) -> str:
    text = text.replace("/etc/medvidbench/env", str(env_file))
    text = text.replace("/opt/medvidbench/venv/bin/", f"{BIN}/")
    return text.replace("/var/backups/medvidbench", str(backups))


def _aged(folder: Path, name: str, days: float) -> Path:
    path = folder / name
    path.write_bytes(b"an old archive")
    then = time.time() - days * DAY
    os.utime(path, (then, then))
    return path


def test_the_nightly_cron_line_backs_up_the_server_and_keeps_fourteen_days(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    line = cron_line()
    fields = line.split(maxsplit=5)
    assert fields[:5] == ["15", "3", "*", "*", "*"], "nightly at 03:15"
    assert "%" not in fields[5], "cron turns % into a new line"
    server = build_runtime(tmp_path / "server", None, synthetic["ground_truth"])
    submit(server, make_user(server), synthetic["weak"].read_bytes(), "Kept nightly")
    before = snapshot(server)
    backups = tmp_path / "backups"
    backups.mkdir()
    old = _aged(backups, "medvidbench-20261001-031500.tar.gz", 20)
    recent = _aged(backups, "medvidbench-20261115-031500.tar.gz", 10)
    fortnight = _aged(backups, "medvidbench-20261111-031500.tar.gz", 14.05)  # the 15th: gone
    kept = _aged(backups, "medvidbench-20261112-031500.tar.gz", 13.05)  # the 14th: kept
    other = _aged(backups, "notes.txt", 40)
    env_file = _server_env_file(tmp_path / "env", server.data_dir)

    # cron runs the command with /bin/sh, in the user's home, with a minimal environment
    cron_env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    done = subprocess.run(
        ["/bin/sh", "-c", _local(fields[5], env_file, backups)],
        cwd=tmp_path,
        env=cron_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    made = sorted(set(backups.glob("medvidbench-*.tar.gz")) - {old, recent, fortnight, kept})
    assert len(made) == 1 and re.fullmatch(r"medvidbench-\d{8}-\d{6}\.tar\.gz", made[0].name)
    assert not old.exists() and recent.exists() and other.exists()
    assert not fortnight.exists() and kept.exists()
    assert tarfile.is_tarfile(made[0])

    restored = subprocess.run(
        [str(BIN / "medvidbench"), "restore", str(made[0])],
        env={**_clean_env(), "MEDVIDBENCH_DATA_DIR": str(tmp_path / "fresh")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert restored.returncode == 0, restored.stderr[-2000:]
    assert snapshot(fresh(tmp_path, None)) == before  # the server's, not an empty default's
    server.engine.dispose()


def _ini(text: str) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in text.splitlines():
        if re.fullmatch(r"\[\w+\]", line.strip()):
            current = sections.setdefault(line.strip()[1:-1], {})
        elif "=" in line:
            key, value = line.split("=", 1)
            current[key.strip()] = value.strip()
    return sections


def test_the_backup_timer_runs_the_same_backup_at_the_same_time(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    unit = _ini(ini_block("OnCalendar"))
    service, timer = unit["Service"], unit["Timer"]
    assert service["Type"] == "oneshot" and timer["Persistent"] == "true"
    assert timer["OnCalendar"] == "*-*-* 03:15:00"  # the cron line's 15 3 * * *
    assert unit["Install"]["WantedBy"] == "timers.target"
    # the very command cron runs, which reads the same env file itself
    program, rest = service["ExecStart"].split(" ", 1)
    assert f"{program} --env-file {service['EnvironmentFile']} {rest}" in cron_line()
    server = build_runtime(tmp_path / "server", None, synthetic["ground_truth"])
    before = snapshot(server)
    backups = tmp_path / "backups"
    backups.mkdir()
    env_file = _server_env_file(tmp_path / "env", server.data_dir)
    assert service["EnvironmentFile"] == "/etc/medvidbench/env"
    # systemd: the EnvironmentFile's KEY=value lines are the command's environment
    declared = read_environment_file(env_file)
    assert declared["MEDVIDBENCH_JUDGE_MODEL"] == "a$b&c;d"  # as systemd reads it
    command = shlex.split(_local(service["ExecStart"], env_file, backups))
    done = subprocess.run(
        command, env={**_clean_env(), **declared}, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (made,) = backups.glob("medvidbench-*.tar.gz")
    restored = subprocess.run(
        [str(BIN / "medvidbench"), "restore", str(made)],
        env={**_clean_env(), "MEDVIDBENCH_DATA_DIR": str(tmp_path / "fresh")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert restored.returncode == 0, restored.stderr[-2000:]
    assert snapshot(fresh(tmp_path, None)) == before
    server.engine.dispose()
