"""The ``medvidbench`` command group and what every command module shares.

Command modules (:mod:`~medvidbench.cli.offline`, :mod:`~medvidbench.cli.server`,
:mod:`~medvidbench.cli.rewards`, ...) import the shared options, the error handling and the
typed :func:`runtime` accessor from here; none of them adds itself to :data:`app`.
:mod:`medvidbench.cli.main` imports each command module and adds its commands explicitly.
Commands are plain functions declared with :mod:`~medvidbench.cli.params` and built into click
commands there.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import click

from medvidbench.cli import consoles
from medvidbench.cli.consoles import escape
from medvidbench.cli.params import Group, Option
from medvidbench.core.errors import ExitCode, InvalidFileError, MedVidBenchError, UsageError
from medvidbench.version import __version__

if TYPE_CHECKING:  # the server stack is imported only by the commands that use it
    from medvidbench.core.benchmark import Benchmark
    from medvidbench.core.judge.client import Judge
    from medvidbench.server.runtime import Runtime

# soft_wrap: a line is never broken at 80 columns when stderr is a file or a pipe, so a command
# printed for the reader to copy (serve's banner) stays whole.
err = consoles.console(stderr=True, soft_wrap=True)

P = ParamSpec("P")
R = TypeVar("R")


def friendly(func: Callable[P, R]) -> Callable[P, R]:
    """Turn our own errors into a message and an exit code instead of a traceback."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except MedVidBenchError as exc:
            err.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False, soft_wrap=True)
            if isinstance(exc, InvalidFileError) and len(exc.problems) > 1:
                from medvidbench.cli.terminal import print_problems

                print_problems(exc.problems, err)  # every problem, each with its place
            raise click.exceptions.Exit(exc.exit_code) from None
        except OSError as exc:
            if exc.filename is None:  # not about a file (a socket, say): a real traceback
                raise
            # A file or folder the system refused: a path the user named that does not work (a
            # missing folder, a folder given for a file, no permission), or a full disk.
            code = ExitCode.USAGE if exc.errno in _PATH_ERRORS else ExitCode.FAILURE
            where = f"{exc.filename!s}" + (f" -> {exc.filename2!s}" if exc.filename2 else "")
            message = f"cannot use {where!r}: {exc.strerror or exc}"
            err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
            raise click.exceptions.Exit(code) from None
        except Exception as exc:
            said = _database_problem(exc)
            if said is None:
                raise
            err.print(f"[bold red]error:[/] {escape(said[0])}", highlight=False, soft_wrap=True)
            raise click.exceptions.Exit(said[1]) from None

    return wrapper


def _database_problem(exc: Exception) -> tuple[str, ExitCode] | None:
    """A server command's database that cannot be used, in one line: a URL SQLAlchemy cannot
    read or whose driver is not installed (a usage error), or a database that does not answer
    (try again later); None for anything else (a real traceback)."""
    module = type(exc).__module__
    if isinstance(exc, ModuleNotFoundError) and exc.name in _DRIVERS:
        return (
            f"MEDVIDBENCH_DATABASE_URL names the driver {exc.name}, which is not installed; "
            "PostgreSQL is postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE",
            ExitCode.USAGE,
        )
    if not module.startswith("sqlalchemy"):
        return None
    from medvidbench.server.outages import unusable_database

    found = unusable_database(exc)
    if found is None:
        return None
    message, later = found
    return message, ExitCode.RETRY_LATER if later else ExitCode.USAGE


_DRIVERS = {"psycopg2", "psycopg", "pymysql", "MySQLdb", "asyncpg", "pg8000", "cx_Oracle"}


_PATH_ERRORS = {
    errno.ENOENT,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.EEXIST,
    errno.ENAMETOOLONG,
    errno.ELOOP,
}


def output_file(path: Path, option: str = "--out") -> None:
    """Refuse, before any work, an output file that cannot be written: a folder, a file in a
    folder that does not exist, or where the user may not write (the write itself can still
    fail, and ``friendly`` reports that too, but a long fit or import is not lost to a typo)."""
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"{option} {str(path)!r} is a folder; name a file in it")
    if not folder.is_dir():
        raise UsageError(f"{option} {str(path)!r}: the folder {str(folder)!r} does not exist")
    if not os.access(path if path.exists() else folder, os.W_OK):
        raise UsageError(f"{option} {str(path)!r}: no permission to write there")


def output_folder(path: Path, option: str) -> None:
    """Refuse, before any work, an output folder that cannot be made or written: a file, or a
    folder whose nearest existing parent is not a writable folder."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {str(path)!r} is a file, not a folder")
    nearest = path
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if not nearest.is_dir():
        raise UsageError(f"{option} {str(path)!r}: {str(nearest)!r} is not a folder")
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {str(path)!r}: no permission to write in {str(nearest)!r}")


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        print(f"medvidbench {__version__}")
        ctx.exit()


@friendly
def _root(no_color: bool, env_file: Path | None) -> None:
    """Evaluate medical video-language models on MedVidBench, and run its leaderboard."""
    if no_color:
        consoles.use_plain_output()
    if env_file is not None:
        from medvidbench.core.envfile import read_environment_file

        for key, value in read_environment_file(env_file).items():
            os.environ.setdefault(key, value)  # as the service sees them; the caller's own win


app = Group(
    name="medvidbench",
    help=_root.__doc__,
    callback=_root,
    params=[
        click.Option(
            ["--version"],
            is_flag=True,
            expose_value=False,
            is_eager=True,
            callback=_version,
            help="Show the version.",
        ),
        click.Option(
            ["--no-color", "no_color"],
            is_flag=True,
            help="Plain output: no colour, bold or other escape sequence (as NO_COLOR=1 does).",
        ),
        click.Option(
            ["--env-file", "env_file"],
            type=click.Path(path_type=Path, dir_okay=False),
            help="Read settings from this file as systemd's EnvironmentFile= does (the service's "
            "/etc/medvidbench/env, for a cron job); the environment's own values win.",
        ),
    ],
)


# --- shared options ---------------------------------------------------------------------------

BenchmarkSlug = Annotated[
    str | None,
    Option(
        "--benchmark",
        envvar="MEDVIDBENCH_BENCHMARK",
        help="Benchmark slug (default: MEDVIDBENCH_BENCHMARK, else the only installed or hosted "
        "benchmark, else medvidbench).",
    ),
]
DataDir = Annotated[
    Path | None,
    Option(
        "--data-dir",
        help="Data folder (default: MEDVIDBENCH_DATA_DIR, else ./medvidbench-data in the "
        "current folder).",
    ),
]


def parse_options(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` command-line options (``--option``) as a mapping."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def judge_for(judge: str, model: str | None, cache: Path | None, bench: Benchmark) -> Judge | None:
    """The ``--judge`` option's judge: None for ``none``; for ``openai`` the one the settings
    describe (the client is imported only for a run that judges)."""
    if judge not in ("none", "openai"):
        raise UsageError(f"unknown judge {judge!r}; expected none or openai")
    if judge == "none":
        return None
    from medvidbench.library import judge_from_settings

    chosen: Judge = judge_from_settings(bench, model, cache)
    return chosen


def runtime(data_dir: Path | None, migrate: bool = True) -> Runtime:
    """The server's runtime for a command, from settings (``--data-dir`` over the environment),
    its database migrated first unless ``migrate`` is false."""
    from medvidbench.core.config import load_settings
    from medvidbench.server.runtime import Runtime

    # Everything a server process writes (database, queue, uploads, the hidden test set, demo
    # files) is for its owner alone; Runtime sets the modes too, this covers what others create.
    os.umask(0o077)
    rt = Runtime(load_settings(data_dir=data_dir))
    if migrate:
        rt.upgrade_database()
    return rt
