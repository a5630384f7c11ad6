"""Output files the system refuses end with one line and exit 2 (1 for a full disk), before any
long work where they can be checked first, and never with a traceback (docs/cli.md)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from medvidbench.cli.main import app

runner = CliRunner()


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "medvidbench", *args], cwd=cwd, capture_output=True, text=True
    )


def test_every_writing_command_refuses_a_missing_folder_before_its_work(
    synthetic: dict[str, Path], tmp_path: Path
) -> None:
    pred, gt = str(synthetic["strong"]), str(synthetic["ground_truth"])
    missing = tmp_path / "no-such-folder"
    cases = {
        "evaluate": ["evaluate", pred, "--ground-truth", gt, "--out", f"{missing}/r.json"],
        # a fit takes minutes on a real set: the folder is checked before it starts
        "rewards fit": ["rewards", "fit", pred, "--ground-truth", gt, "--out", f"{missing}/s.json"],
        "rewards prepare": ["rewards", "prepare", gt, "--out", f"{missing}/rows.jsonl"],
        "import": ["import", "vlmevalkit", pred, "-o", f"{missing}/sub.json"],
    }
    for name, args in cases.items():
        proc = _run(*args, cwd=tmp_path)
        assert proc.returncode == 2, (name, proc.stderr)
        assert "Traceback" not in proc.stderr, name
        assert f"the folder {str(missing)!r} does not exist" in proc.stderr, (name, proc.stderr)
    assert not missing.exists()


def test_a_folder_named_as_the_output_file_is_refused(
    synthetic: dict[str, Path], tmp_path: Path
) -> None:
    proc = _run(
        "evaluate",
        str(synthetic["strong"]),
        "--ground-truth",
        str(synthetic["ground_truth"]),
        "--out",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"--out {str(tmp_path)!r} is a folder; name a file in it" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["synth", "--samples", "5", "--out-dir", "{file}/inside"],
        ["export-task", "lmms-eval", "{file}/inside"],
    ],
)
def test_an_output_folder_under_a_file_is_refused(tmp_path: Path, args: list[str]) -> None:
    file = tmp_path / "plain.txt"
    file.write_text("not a folder")
    proc = _run(*[a.format(file=file) for a in args], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{str(file)!r} is not a folder" in proc.stderr
    assert file.read_text() == "not a folder"


def test_a_write_the_system_refuses_later_is_one_line(
    synthetic: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What only the write itself finds (a read-only file system, a full disk) is reported
    with the path and the system's reason: exit 2 for the path, 1 for the disk."""
    out = tmp_path / "r.json"
    args = ["evaluate", str(synthetic["strong"]), "--ground-truth", str(synthetic["ground_truth"])]
    for code, expected in ((errno.EROFS, 2), (errno.ENOSPC, 1)):

        def refuse(self: Path, *a: object, code: int = code, **k: object) -> int:
            raise OSError(code, os.strerror(code), str(self))

        monkeypatch.setattr(Path, "write_text", refuse)
        result = runner.invoke(app, [*args, "--out", str(out)])
        assert result.exit_code == expected, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        line = f"cannot use {str(out)!r}: {os.strerror(code)}"
        assert line in result.output.replace("\n", ""), result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("url", "code", "said"),
    [
        (
            "postgresql+psycopg://postgres@127.0.0.1:1/x",
            7,
            "the database cannot be reached: OperationalError: connection",
        ),
        ("postgres://x@127.0.0.1/y", 2, "MEDVIDBENCH_DATABASE_URL cannot be used: Can't load"),
        ("postgresql+psycopg2://x@127.0.0.1/y", 2, "names the driver psycopg2, which is not"),
        ("notaurl", 2, "MEDVIDBENCH_DATABASE_URL cannot be used: Could not parse"),
        ("sqlite:////nonexistent-folder/x.sqlite3", 2, "the database file cannot be opened"),
    ],
)
def test_a_database_that_cannot_be_used_is_one_line(
    tmp_path: Path, url: str, code: int, said: str
) -> None:
    """An operator's mistyped or unreachable database: one line and an exit code that says
    whether to try again (docs/cli.md), never a traceback of 140 lines."""
    result = runner.invoke(
        app,
        ["db", "upgrade", "--data-dir", str(tmp_path / "data")],
        env={"MEDVIDBENCH_DATABASE_URL": url},
    )
    assert result.exit_code == code, result.output
    assert said in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_queue_url_that_is_not_redis_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["db", "upgrade", "--data-dir", str(tmp_path / "data")],
        env={"MEDVIDBENCH_QUEUE_URL": "amqp://guest@127.0.0.1//"},
    )
    assert result.exit_code == 2 and "is not a Redis URL: redis://HOST:PORT/DB" in result.output


def test_a_statement_the_database_refuses_keeps_its_traceback() -> None:
    """Only a database that cannot be reached or a URL that cannot be used is one line: a
    statement the database refuses (a missing column: a migration's or a query's bug) is a
    bug, shown whole, never 'try again later' (a review found one called unreachable)."""
    from sqlalchemy.exc import ArgumentError, OperationalError

    from medvidbench.server.outages import unusable_database

    missing = OperationalError(
        "INSERT ...", {}, Exception("table api_tokens has no column named x")
    )
    assert unusable_database(missing) is None
    assert unusable_database(ArgumentError("ORDER BY expression expected, got object")) is None
    lost = OperationalError("SELECT 1", {}, Exception("connection failed: Connection refused"))
    found = unusable_database(lost)
    assert found is not None and found[1] is True
