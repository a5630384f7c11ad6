"""Backup and restore: a fresh server restored from a backup holds every board, submission,
evaluation and stored file of the original, on SQLite and on PostgreSQL."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text

from medvidbench.core.config import Settings
from medvidbench.core.errors import UsageError
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.backups import backup, pg_program, stored_files
from medvidbench.server.services.exports import export_board
from medvidbench.server.services.restores import restore
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.models import Base
from tests.server.conftest import build_runtime, make_user, variants
from tests.server.private_services import private_postgres


@contextmanager
def two_databases(kind: str) -> Iterator[tuple[str | None, str | None]]:
    """The original's and the fresh server's database URLs (None: SQLite in the data folder)."""
    if kind == "sqlite":
        yield None, None
        return
    with private_postgres() as pg:
        admin = create_engine(pg.url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            for name in ("original", "fresh"):
                conn.execute(text(f"CREATE DATABASE {name}"))
        admin.dispose()
        base = pg.url.rsplit("/", 1)[0]
        yield f"{base}/original", f"{base}/fresh"


def snapshot(runtime: Runtime) -> dict[str, Any]:
    """Every row of every table, both boards as exported, and every stored file's digest."""
    rows = {}
    with runtime.sessions() as session:
        for table in Base.metadata.sorted_tables:
            order = list(table.primary_key.columns)
            found = session.execute(select(table).order_by(*order)).mappings().all()
            rows[table.name] = [dict(r) for r in found]
    return {
        "rows": rows,
        "boards": {
            kind: export_board(runtime, kind, "json", slug="medvidbench")
            for kind in ("official", "community")
        },
        "files": {
            name: hashlib.sha256(path.read_bytes()).hexdigest()
            for name, path in stored_files(runtime.data_dir)
        },
    }


def fresh(tmp_path: Path, url: str | None) -> Runtime:
    """A server that has never run: an empty data folder, an empty (unmigrated) database."""
    settings = Settings(data_dir=tmp_path / "fresh", database_url=url, benchmarks="medvidbench")  # type: ignore[call-arg]
    return Runtime(settings)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_restore_into_a_fresh_server_gives_back_everything(
    kind: str, tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    with two_databases(kind) as (original_url, fresh_url):
        original = build_runtime(tmp_path / "original", original_url, synthetic["ground_truth"])
        alice = make_user(original)
        for archetype in ("weak", "strong", "perfect"):
            submit(original, alice, synthetic[archetype].read_bytes(), f"Model {archetype}")
        hidden = variants(synthetic["weak"], 2)[1]
        submit(original, alice, hidden, "Hidden", visibility="private")
        before = snapshot(original)
        assert len(before["rows"]["submissions"]) == 4 and before["rows"]["evaluations"]
        assert "Model strong" in before["boards"]["community"]

        (tmp_path / "backups").mkdir()
        archive = backup(original, tmp_path / "backups")  # a folder: a file named by the time
        assert archive.path.name.endswith(".tar.gz") and archive.database == kind

        target = fresh(tmp_path, fresh_url)
        restored = restore(target, archive.path)
        assert restored.files == len(before["files"])
        assert snapshot(target) == before
        target.upgrade_database()  # the restored database is at the code's migration head
        assert snapshot(target) == before

        # A server with data is not overwritten unless told to.
        with pytest.raises(UsageError, match="refusing to restore over existing data"):
            restore(target, archive.path)
        restore(target, archive.path, force=True)
        assert snapshot(target) == before
        target.engine.dispose()
        original.engine.dispose()


def test_a_damaged_or_foreign_archive_is_refused(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    original = build_runtime(tmp_path / "original", None, synthetic["ground_truth"])
    archive = backup(original, tmp_path / "b.tar.gz").path
    with pytest.raises(UsageError, match="exists already"):
        backup(original, archive)
    target = fresh(tmp_path, None)
    damaged = tmp_path / "damaged.tar.gz"
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(UsageError, match=r"cannot be read as a backup|is damaged"):
        restore(target, damaged)
    stranger = tmp_path / "stranger.tar.gz"
    import tarfile

    with tarfile.open(stranger, "w:gz") as tar:
        tar.add(str(synthetic["weak"]), arcname="weak.json")
    with pytest.raises(UsageError, match="not a medvidbench backup"):
        restore(target, stranger)
    assert not list(stored_files(target.data_dir))  # nothing was written
    original.engine.dispose()


def test_cli_backup_and_restore(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    original = build_runtime(tmp_path / "original", None, synthetic["ground_truth"])
    submit(original, make_user(original), synthetic["weak"].read_bytes(), "Kept")
    before = snapshot(original)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDVIDBENCH_")}
    env["MEDVIDBENCH_BENCHMARKS"] = "medvidbench"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "medvidbench", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    archive = tmp_path / "nightly.tar.gz"
    made = cli("backup", str(archive), "--data-dir", str(original.data_dir))
    assert made.returncode == 0 and "backed up the sqlite database" in made.stdout, made.stderr
    done = cli("restore", str(archive), "--data-dir", str(tmp_path / "fresh"))
    assert done.returncode == 0, done.stderr
    again = cli("restore", str(archive), "--data-dir", str(tmp_path / "fresh"))
    assert again.returncode != 0 and "--force" in again.stderr and "Traceback" not in again.stderr
    assert snapshot(fresh(tmp_path, None)) == before
    original.engine.dispose()


def test_pg_dump_matches_the_server(tmp_path: Path) -> None:
    """The dump program chosen is of the server's major version (or newer), never older."""
    with private_postgres() as pg:
        engine = create_engine(pg.url)
        with engine.connect() as conn:
            major = int(conn.execute(text("SHOW server_version_num")).scalar_one()) // 10000
        engine.dispose()
    program = pg_program("pg_dump", major)
    out = subprocess.run([program, "--version"], capture_output=True, text=True, check=True)
    assert int(out.stdout.split()[2].split(".")[0]) >= major
    with pytest.raises(UsageError, match="no pg_dump for PostgreSQL 999"):
        pg_program("pg_dump", 999)
