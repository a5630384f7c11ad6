"""Stored files in the database: a worker with another data folder needs only the database.

Uploads, the files kept between steps and test sets go to the ``stored_files`` table when the
server keeps its files in the database (the default with PostgreSQL); files a deployment stored
on disk before are still read, and ``db move-files-into-database`` moves them in.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from medvidbench.core.config import Settings
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.steps import run_step
from medvidbench.server.services.submissions import delete_submission, submit
from medvidbench.server.store import files as files_module
from medvidbench.server.store.files import DatabaseFiles
from medvidbench.server.store.models import Evaluation, StoredFile, Submission
from tests.server.conftest import HeldQueue, build_runtime, make_user


def _database(request: pytest.FixtureRequest, tmp_path: Path, engine: str) -> str:
    if engine == "postgresql":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path / 'shared.sqlite3'}"


def _on_disk(data_dir: Path) -> list[str]:
    """The stored files in a data folder (not the scratch or the embedded database)."""
    return sorted(
        p.name
        for d in ("submissions", "benchmarks")
        for p in (data_dir / d).glob("*")
        if p.is_file()
    )


def _stored(runtime: Runtime) -> dict[str, int]:
    with runtime.sessions() as session:
        rows = session.execute(
            select(StoredFile.kind, func.count(func.distinct(StoredFile.name))).group_by(
                StoredFile.kind
            )
        ).all()
    return {kind: int(n) for kind, n in rows}


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_worker_with_its_own_data_folder_scores_from_the_database_alone(
    request: pytest.FixtureRequest, tmp_path: Path, synthetic: dict[str, Path], engine: str
) -> None:
    url = _database(request, tmp_path, engine)
    web = build_runtime(  # every upload checked in the child, from its local test set copy
        tmp_path / "web",
        url,
        synthetic["ground_truth"],
        file_store="database",
        upload_process_bytes=0,
    )
    assert isinstance(web.files, DatabaseFiles)
    web.queue = HeldQueue()
    sub = submit(web, make_user(web), synthetic["strong"].read_bytes(), "Elsewhere")
    assert _on_disk(web.data_dir) == []  # nothing a worker would need is in the web's folder
    assert _stored(web) == {"submission": 1, "matched": 1, "test-set": 1}
    worker = Runtime(
        Settings(data_dir=tmp_path / "worker", database_url=url, benchmarks="medvidbench")
    )  # type: ignore[call-arg]
    if engine == "sqlite":
        assert not isinstance(worker.files, DatabaseFiles)  # auto: SQLite keeps its folder
        worker = Runtime(
            Settings(  # type: ignore[call-arg]
                data_dir=tmp_path / "worker",
                database_url=url,
                benchmarks="medvidbench",
                file_store="database",
            )
        )
    assert isinstance(worker.files, DatabaseFiles)
    assert run_step(worker, sub.id, "score", "elsewhere-1") == "done"
    with worker.sessions() as session:
        row = session.get(Submission, sub.id)
        assert row is not None and row.status == "scored"
        assert session.scalar(select(func.count()).select_from(Evaluation)) == 1
    # the worker's folder holds no stored file either: only the database was read
    assert _on_disk(worker.data_dir) == []
    delete_submission(web, make_user(web, "root", "admin", team=None), sub.id)
    assert _stored(web) == {"test-set": 1}
    web.engine.dispose()
    worker.engine.dispose()


def test_a_large_file_is_stored_in_parts_and_read_back_whole(
    tmp_path: Path, synthetic: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files_module, "PART_BYTES", 1000)
    runtime = build_runtime(tmp_path, None, synthetic["ground_truth"], file_store="database")
    data = synthetic["weak"].read_bytes()
    runtime.files.write("submission", 7, data)
    with runtime.sessions() as session:
        parts = session.scalar(
            select(func.count()).select_from(StoredFile).where(StoredFile.kind == "submission")
        )
    assert parts == -(-len(gzip.compress(data, compresslevel=1)) // 1000) and parts > 1
    assert runtime.files.read("submission", 7) == data
    staged = runtime.stage(data)  # an upload, streamed into the table part by part
    with runtime.sessions.begin() as session:
        runtime.files.place(session, "submission", 8, staged)
    assert runtime.files.read("submission", 8) == data and not staged.exists()
    gt_sha = runtime.ground_truth(_current_sha(runtime)).sha256
    copy = runtime.test_set_file(gt_sha)  # the child process's local copy
    assert gzip.decompress(copy.read_bytes()) == synthetic["ground_truth"].read_bytes()
    assert copy.stat().st_mode & 0o777 == 0o600


def _current_sha(runtime: Runtime) -> str:
    from medvidbench.server.services.test_sets import current_benchmark

    return current_benchmark(runtime).gt_sha256


def test_files_stored_on_disk_before_are_read_then_moved_into_the_database(
    tmp_path: Path, synthetic: dict[str, Path], postgres_url: str
) -> None:
    """An existing PostgreSQL deployment whose files are in its data folder keeps working."""
    before = build_runtime(tmp_path, postgres_url, synthetic["ground_truth"], file_store="folder")
    before.queue = HeldQueue()
    sub = submit(before, make_user(before), synthetic["weak"].read_bytes(), "On disk")
    on_disk = _on_disk(before.data_dir)
    assert len(on_disk) == 3 and _stored(before) == {}
    before.engine.dispose()
    now = Runtime(Settings(data_dir=before.data_dir, database_url=postgres_url))  # type: ignore[call-arg]
    assert isinstance(now.files, DatabaseFiles)  # auto, with PostgreSQL
    assert now.read_upload(sub.id) == synthetic["weak"].read_bytes()  # from the folder
    env = {
        **os.environ,
        "MEDVIDBENCH_DATABASE_URL": postgres_url,
        "MEDVIDBENCH_BENCHMARKS": "medvidbench",
    }
    moved = subprocess.run(
        [
            sys.executable,
            "-m",
            "medvidbench",
            "db",
            "move-files-into-database",
            "--data-dir",
            str(before.data_dir),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert moved.returncode == 0, moved.stderr
    assert "submission: 1, matched: 1, scored: 0, test-set: 1, judge-card: 0 moved" in moved.stdout
    assert _on_disk(before.data_dir) == []
    assert _stored(now) == {"submission": 1, "matched": 1, "test-set": 1}
    elsewhere = Runtime(
        Settings(data_dir=tmp_path / "elsewhere", database_url=postgres_url)  # type: ignore[call-arg]
    )
    assert run_step(elsewhere, sub.id, "score", "mover") == "done"
    now.engine.dispose()
    elsewhere.engine.dispose()


def test_the_embedded_database_keeps_its_files_in_the_folder(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    runtime = build_runtime(tmp_path, None, synthetic["ground_truth"])
    runtime.queue = HeldQueue()
    sub = submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Local")
    assert not isinstance(runtime.files, DatabaseFiles)
    assert runtime.submission_path(sub.id).exists() and _stored(runtime) == {}
    refused = subprocess.run(
        [sys.executable, "-m", "medvidbench", "db", "move-files-into-database"],
        env={**os.environ, "MEDVIDBENCH_DATA_DIR": str(runtime.data_dir)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0 and "nothing to move" in refused.stderr
