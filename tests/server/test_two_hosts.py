"""Two hosts, no shared folder: the web on one, a worker on the other, over a network link.

Two network namespaces joined by a veth pair stand for two machines:

- ``web`` host, 10.200.0.1: a private PostgreSQL and a private ``redis-server`` bound to that
  address, and ``medvidbench serve --workers 0`` (pages and API only) with its own data folder;
- ``worker`` host, 10.200.0.2: ``medvidbench worker`` with another data folder, reaching the
  database and the queue over the link, and the client that uploads to the web.

The worker scores the upload from what the database holds (the upload, the matched submission
and the test set, in ``stored_files``); neither data folder holds a stored file afterwards. The
namespaces are removed, and every process started here stopped, whatever happens.

Needs root, ``ip`` (iproute2), ``initdb``/``pg_ctl``, ``runuser`` and ``redis-server``: skipped on a
developer's machine without them, failed under CI=true.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.server.conftest import service_missing
from tests.server.private_services import _binary

WEB_ADDRESS, WORKER_ADDRESS = "10.200.0.1", "10.200.0.2"
PG_PORT, REDIS_PORT, WEB_PORT = 5432, 6379, 8000
CLIENT = r"""
import json, sys, time
import httpx

base, token, path = sys.argv[1], sys.argv[2], sys.argv[3]
deadline = time.monotonic() + 120
while True:  # the web process may still be starting
    try:
        if httpx.get(base + "/api/v1/health", timeout=5).status_code == 200:
            break
    except httpx.TransportError:
        pass
    if time.monotonic() > deadline:
        sys.exit("the web process never answered its health check")
    time.sleep(0.5)
headers = {"Authorization": "Bearer " + token}
with open(path, "rb") as fh:
    sent = httpx.post(base + "/api/v1/submissions", headers=headers, timeout=120,
                      files={"file": ("predictions.json", fh)}, data={"model_name": "Far away"})
print(json.dumps({"upload": sent.status_code, "body": sent.json()}), flush=True)
sid = sent.json()["id"]
deadline = time.monotonic() + 240
while time.monotonic() < deadline:
    seen = httpx.get(base + f"/api/v1/submissions/{sid}", headers=headers, timeout=30).json()
    if seen["status"] in ("scored", "complete", "failed", "rejected"):
        break
    time.sleep(0.5)
print(json.dumps({"final": seen}), flush=True)
"""


def _need(condition: bool, what: str) -> None:
    if not condition:
        service_missing(what, RuntimeError("not available"))


def _run(*args: str, timeout: float = 120, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), check=True, capture_output=True, text=True, timeout=timeout, **kwargs
    )  # type: ignore[call-overload, no-any-return]


@contextmanager
def two_hosts() -> Iterator[tuple[str, str]]:
    """Two network namespaces joined by a veth pair (web 10.200.0.1, worker 10.200.0.2)."""
    tag = uuid.uuid4().hex[:6]
    web, worker = f"mvb-web-{tag}", f"mvb-wrk-{tag}"
    made: list[str] = []
    try:
        for ns in (web, worker):
            _run("ip", "netns", "add", ns)
            made.append(ns)
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "link", "add", f"vw{tag}", "netns", web, "type", "veth", "peer", "name",
             f"vk{tag}", "netns", worker)  # fmt: skip
        for ns, link, address in ((web, f"vw{tag}", WEB_ADDRESS), (worker, f"vk{tag}", WORKER_ADDRESS)):  # fmt: skip
            _run("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", link)
            _run("ip", "-n", ns, "link", "set", link, "up")
        yield web, worker
    finally:
        for ns in made:  # the veth pair goes with its namespaces
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=60)


@contextmanager
def postgres_in(ns: str) -> Iterator[str]:
    """A throwaway PostgreSQL cluster in namespace ``ns``, listening on the web host's address
    (trust authentication for the link's /24 only)."""
    folder = Path(tempfile.mkdtemp(prefix="mvb-pg-ns-"))
    data = folder / "data"
    shutil.chown(folder, "postgres", "postgres")
    as_postgres = ["ip", "netns", "exec", ns, "runuser", "-u", "postgres", "--"]
    ctl = [*as_postgres, _binary("pg_ctl"), "-D", str(data), "-w", "-t", "60"]
    try:
        _run(*as_postgres, _binary("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
             "--no-sync", "-E", "UTF8")  # fmt: skip
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write("host all all 10.200.0.0/24 trust\n")
        options = f"-p {PG_PORT} -k {folder} -c listen_addresses={WEB_ADDRESS} -c fsync=off"
        _run(*ctl, "-o", options, "-l", str(folder / "log"), "start")
        yield f"postgresql+psycopg://postgres@{WEB_ADDRESS}:{PG_PORT}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*ctl, "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def process(args: list[str], log: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A process started for the test, stopped (SIGTERM, then SIGKILL) on the way out."""
    with log.open("wb") as out:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=30)


def _stored_on_disk(data_dir: Path) -> list[str]:
    return sorted(
        str(p.relative_to(data_dir))
        for folder in ("submissions", "benchmarks")
        for p in (data_dir / folder).glob("*")
    )


def test_a_worker_on_another_host_scores_an_upload_with_no_shared_folder(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    _need(os.geteuid() == 0, "root (to create network namespaces)")
    _need(shutil.which("ip") is not None, "the ip command (iproute2)")
    _need(shutil.which("runuser") is not None, "runuser (to run PostgreSQL as root)")
    for program in ("initdb", "pg_ctl", "redis-server"):
        _binary(program)  # fails under CI=true when missing
    mvb = [sys.executable, "-m", "medvidbench"]
    web_dir, worker_dir = tmp_path / "web-data", tmp_path / "worker-data"
    with ExitStack() as stack:
        web, worker = stack.enter_context(two_hosts())
        on_web, on_worker = ["ip", "netns", "exec", web], ["ip", "netns", "exec", worker]
        database = stack.enter_context(postgres_in(web))
        queue = f"redis://{WEB_ADDRESS}:{REDIS_PORT}/0"
        env = {
            **os.environ,
            "MEDVIDBENCH_DATABASE_URL": database,
            "MEDVIDBENCH_QUEUE_URL": queue,
            "MEDVIDBENCH_BENCHMARKS": "medvidbench",
            "MEDVIDBENCH_SECRET_KEY": secrets.token_urlsafe(40),
            "MEDVIDBENCH_JUDGE_ENABLED": "false",
            "MEDVIDBENCH_BOOTSTRAP_REPLICATES": "100",
        }
        for unset in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MEDVIDBENCH_FILE_STORE"):
            env.pop(unset, None)
        stack.enter_context(
            process(
                [*on_web, _binary("redis-server"), "--bind", WEB_ADDRESS, "--port",
                 str(REDIS_PORT), "--save", "", "--appendonly", "no", "--protected-mode", "no"],
                tmp_path / "redis.log",
                env,
            )
        )  # fmt: skip
        password = secrets.token_urlsafe(16)
        for name, flags in (("operator", ["--admin"]), ("alice", ["--team", "Far Lab"])):
            _run(*on_web, *mvb, "users", "create", name, *flags, "--password-stdin",
                 "--data-dir", str(web_dir), input=password + "\n", env=env)  # fmt: skip
        token = (
            _run(*on_web, *mvb, "tokens", "create", "alice", "--data-dir", str(web_dir), env=env)
            .stdout.strip()
            .splitlines()[-1]
        )
        web_proc = stack.enter_context(
            process(
                [*on_web, *mvb, "serve", "--host", WEB_ADDRESS, "--port", str(WEB_PORT),
                 "--workers", "0", "--ground-truth", str(synthetic["ground_truth"]),
                 "--data-dir", str(web_dir)],
                tmp_path / "web.log",
                env,
            )
        )  # fmt: skip
        worker_proc = stack.enter_context(
            process(
                [*on_worker, *mvb, "worker", "--workers", "1", "--data-dir", str(worker_dir)],
                tmp_path / "worker.log",
                env,
            )
        )
        client = tmp_path / "client.py"
        client.write_text(CLIENT)
        ran = subprocess.run(
            [*on_worker, sys.executable, str(client), f"http://{WEB_ADDRESS}:{WEB_PORT}", token,
             str(synthetic["strong"])],
            capture_output=True, text=True, timeout=420, env=env,
        )  # fmt: skip
        logs = {n: (tmp_path / f"{n}.log").read_text(errors="replace")[-3000:] for n in ("web", "worker")}  # fmt: skip
        assert ran.returncode == 0, (ran.stdout, ran.stderr, logs)
        lines = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
        upload, final = lines[0], lines[-1]["final"]
        assert upload["upload"] == 202, (upload, logs)
        assert final["status"] in ("scored", "complete"), (final, logs)
        assert web_proc.poll() is None and worker_proc.poll() is None, logs
        assert "Executing" in logs["worker"], logs  # the worker, not the web, ran the job
    # neither host's folder holds a stored file: both read and wrote the database only
    assert _stored_on_disk(web_dir) == [] and _stored_on_disk(worker_dir) == []
    left = _run("ip", "netns", "list").stdout
    assert web not in left and worker not in left
