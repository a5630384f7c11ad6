"""Server administration commands: database, users, tokens, benchmarks, workers, exports.

Thin adapters over the service layer; each builds a :class:`Runtime` from settings (flags on
top of the environment) and calls one service function.
"""

from __future__ import annotations

import getpass
import sys
from pathlib import Path
from typing import Annotated

import typer

from medvidbench.cli import app, err, friendly
from medvidbench.errors import UsageError

DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="Data folder (default: MEDVIDBENCH_DATA_DIR).")
]
db_app = typer.Typer(help="The server's database.", no_args_is_help=True)
users_app = typer.Typer(help="User accounts.", no_args_is_help=True)
tokens_app = typer.Typer(help="API tokens.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks (ground-truth test sets).", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(users_app, name="users")
app.add_typer(tokens_app, name="tokens")
app.add_typer(bench_app, name="benchmarks")


def runtime(data_dir: Path | None, migrate: bool = True) -> object:
    from medvidbench.config import load_settings
    from medvidbench.runtime import Runtime
    from medvidbench.store.db import upgrade

    rt = Runtime(load_settings(data_dir=data_dir))
    if migrate:
        upgrade(rt.engine)
    return rt


@db_app.command("upgrade")
@friendly
def db_upgrade(data_dir: DataDir = None) -> None:
    """Create or migrate the database schema to the newest version."""
    runtime(data_dir)
    print("database is up to date")


@users_app.command("create")
@friendly
def users_create(
    name: Annotated[str, typer.Argument(help="Username (3-40 letters, digits, . _ -).")],
    admin: Annotated[bool, typer.Option("--admin", help="Give the user the admin role.")] = False,
    role: Annotated[str, typer.Option(help="Role: submitter, maintainer or admin.")] = "submitter",
    team: Annotated[str | None, typer.Option(help="Team (organisation) name.")] = None,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from standard input.")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Create a user. The password is asked for (or read from stdin); there is no default."""
    from medvidbench.accounts import create_user
    from medvidbench.store.db import transaction

    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise UsageError("the passwords differ")
    rt = runtime(data_dir)
    with transaction(rt.sessions) as session:  # type: ignore[attr-defined]
        user = create_user(session, name, password, role="admin" if admin else role, team=team)
    print(f"created user {user.username!r} with role {user.role}")


@tokens_app.command("create")
@friendly
def tokens_create(
    user: Annotated[str, typer.Argument(help="Username.")],
    name: Annotated[str, typer.Option(help="A label for the token.")] = "cli",
    data_dir: DataDir = None,
) -> None:
    """Create an API token for a user and print it (it is shown only this once)."""
    from sqlalchemy import select

    from medvidbench.accounts import create_token
    from medvidbench.errors import NotFoundError
    from medvidbench.store.db import transaction
    from medvidbench.store.models import User

    rt = runtime(data_dir)
    with transaction(rt.sessions) as session:  # type: ignore[attr-defined]
        row = session.scalar(select(User).where(User.username == user))
        if row is None:
            raise NotFoundError(f"no user {user!r}")
        secret, _ = create_token(session, row, name)
    err.print("store this token now; it is not shown again:", highlight=False)
    print(secret)


@bench_app.command("load")
@friendly
def benchmarks_load(
    ground_truth: Annotated[Path, typer.Argument(help="Ground-truth file (SFT format).")],
    name: Annotated[str, typer.Option(help="Display name.")] = "MedVidBench",
    demo: Annotated[bool, typer.Option(help="Label it as demo data.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Validate a ground-truth file and make it the current benchmark."""
    from medvidbench.leaderboards import load_benchmark

    bench = load_benchmark(runtime(data_dir), ground_truth, name=name, demo=demo)  # type: ignore[arg-type]
    print(f"benchmark {bench.id}: {bench.sample_count:,} samples, sha256 {bench.gt_sha256}")


@app.command()
@friendly
def worker(
    workers: Annotated[int, typer.Option(min=1, max=64, help="Jobs run at once.")] = 2,
    data_dir: DataDir = None,
) -> None:
    """Consume background jobs (scoring, judging) until stopped; run any number of them."""
    from medvidbench.jobs import run_worker

    run_worker(runtime(data_dir), workers)  # type: ignore[arg-type]


@app.command()
@friendly
def rescore(
    profile: Annotated[str, typer.Option(help="Profile to add evaluations under.")] = "strict-v2",
    data_dir: DataDir = None,
) -> None:
    """Queue a re-scoring of every scored submission (old evaluations are kept)."""
    from sqlalchemy import select

    from medvidbench.jobs import attach_queue
    from medvidbench.profiles import get_profile
    from medvidbench.store.models import Submission

    get_profile(profile)
    rt = runtime(data_dir)
    jobs = attach_queue(rt)  # type: ignore[arg-type]
    with rt.sessions() as session:  # type: ignore[attr-defined]
        ids = list(
            session.scalars(
                select(Submission.id).where(
                    Submission.status.in_(("scored", "judging", "complete"))
                )
            )
        )
    for sid in ids:
        jobs.rescore(sid, profile)
    print(f"queued {len(ids)} re-scoring job(s) under {profile}")


@app.command()
@friendly
def export(
    board: Annotated[str, typer.Option(help="official or community.")] = "official",
    fmt: Annotated[str, typer.Option("--format", help="csv or json.")] = "csv",
    data_dir: DataDir = None,
) -> None:
    """Print a ranked board with every metric and its provenance."""
    from medvidbench.leaderboards import export_board

    sys.stdout.write(export_board(runtime(data_dir), board, fmt))  # type: ignore[arg-type]
