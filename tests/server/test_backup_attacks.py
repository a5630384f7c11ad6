"""Backups an attacker or a mistake made: a restore writes only the server's own files inside
its data folder, a restore that fails leaves the server as it was, a backup writes nothing of
the server (issue #32, items 1 and 10; #36 item 7)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from medvidbench.core.errors import UsageError
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.backups import backup, kept_name, stored_files
from medvidbench.server.services.restores import restore
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.db import current_revision
from tests.server.conftest import build_runtime, make_user
from tests.server.test_backups import fresh, snapshot, two_databases


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDVIDBENCH_")}
    env["MEDVIDBENCH_BENCHMARKS"] = "medvidbench"
    return subprocess.run(
        [sys.executable, "-m", "medvidbench", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def rewrite(
    archive: Path,
    out: Path,
    extra: dict[str, bytes],
    replace: dict[str, bytes],
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> Path:
    """A copy of ``archive`` with members added or replaced, its manifest saying what the
    attacker wants (the manifest travels inside the archive; ``edit`` changes it last)."""
    with tarfile.open(archive, "r:gz") as tar:
        members = {
            m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar
            if m.isfile()
        }
    manifest = json.loads(members.pop("manifest.json"))
    members.update(replace)
    members.update(extra)
    for name, body in members.items():
        manifest["members"][name] = {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    if edit is not None:
        edit(manifest)
    members["manifest.json"] = json.dumps(manifest).encode()
    with tarfile.open(out, "w:gz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return out


@pytest.fixture
def served(tmp_path: Path, synthetic: dict[str, Path]) -> Runtime:
    original = build_runtime(tmp_path / "original", None, synthetic["ground_truth"])
    submit(original, make_user(original), synthetic["weak"].read_bytes(), "Kept")
    yield original
    original.engine.dispose()


@pytest.fixture(scope="module")
def good_archive(tmp_path_factory: pytest.TempPathFactory, synthetic: dict[str, Path]) -> Path:
    """An honest backup of a server with one submission, made once by the command line: the
    crafted archives below are rewritten from it."""
    folder = tmp_path_factory.mktemp("good")
    original = build_runtime(folder / "original", None, synthetic["ground_truth"])
    submit(original, make_user(original), synthetic["weak"].read_bytes(), "Kept")
    original.engine.dispose()
    made = cli("backup", str(folder / "good.tar.gz"), "--data-dir", str(original.data_dir))
    assert made.returncode == 0, made.stderr
    return folder / "good.tar.gz"


@pytest.mark.parametrize(
    "name",
    [
        "files//{outside}/pwned",
        "files///{outside}/pwned",
        "files/../{rel}/pwned",
        "files/submissions/../../pwned",
        "files/./secret_key",
        "files/",
        "files/submissions/\\..\\pwned",
        "elsewhere/pwned",
    ],
)
def test_a_crafted_member_name_is_refused_and_writes_nothing(
    name: str, tmp_path: Path, good_archive: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    member = name.format(outside=str(outside).lstrip("/"), rel="outside")
    crafted = rewrite(good_archive, tmp_path / "bad.tar.gz", {member: b"owned"}, {})
    target = tmp_path / "fresh"
    done = cli("restore", str(crafted), "--data-dir", str(target))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unexpected member" in done.stderr and "Traceback" not in done.stderr
    assert not (outside / "pwned").exists() and not (tmp_path / "pwned").exists()
    assert not list(stored_files(target))


def test_members_that_are_not_server_files_are_left_out(tmp_path: Path, served: Runtime) -> None:
    """Safe names that the server does not keep (its database file, a dotfile, a cache) are
    never written, so an archive cannot replace the live database or a shell's start-up file."""
    archive = backup(served, tmp_path / "good.tar.gz").path
    extra = {
        "files/medvidbench.sqlite3": b"not a database",
        "files/profile": b"echo owned",
        "files/cache/submission/1.gz": b"x",
    }
    crafted = rewrite(archive, tmp_path / "extra.tar.gz", extra, {})
    target = fresh(tmp_path, None)
    done = restore(target, crafted)
    assert sorted(done.skipped) == ["cache/submission/1.gz", "medvidbench.sqlite3", "profile"]
    assert not (target.data_dir / "profile").exists()
    assert snapshot(target) == snapshot(served)
    target.engine.dispose()


def test_a_symlinked_folder_in_the_target_is_never_written_through(
    tmp_path: Path, served: Runtime
) -> None:
    archive = backup(served, tmp_path / "good.tar.gz").path
    target = fresh(tmp_path, None)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (target.data_dir / "submissions").symlink_to(outside)
    with pytest.raises(UsageError, match="symbolic link"):
        restore(target, archive)
    assert not any(outside.iterdir())
    target.engine.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_forced_restore_that_fails_leaves_the_server_as_it_was(
    kind: str, tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    with two_databases(kind) as (original_url, target_url):
        original = build_runtime(tmp_path / "original", original_url, synthetic["ground_truth"])
        submit(original, make_user(original), synthetic["weak"].read_bytes(), "Original")
        archive = backup(original, tmp_path / "good.tar.gz").path
        target = build_runtime(tmp_path / "target", target_url, synthetic["ground_truth"])
        submit(target, make_user(target, "bob"), synthetic["strong"].read_bytes(), "Target's")
        before = snapshot(target)
        member = (
            "database/medvidbench.sqlite3" if kind == "sqlite" else "database/medvidbench.pgdump"
        )
        broken = rewrite(archive, tmp_path / "broken.tar.gz", {}, {member: b"PGDMP" + b"\0" * 4000})
        with pytest.raises(UsageError, match=r"failed|not a database|file is not"):
            restore(target, broken, force=True)
        assert snapshot(target) == before  # every table and every stored file
        target.engine.dispose()
        original.engine.dispose()


def test_an_archive_that_would_fill_the_disk_is_refused_before_anything_is_written(
    tmp_path: Path, good_archive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few MB of gzip can unpack to GBs (a helper's attack wrote 3 GiB from 3.7 MB): a
    restore adds up the checked sizes first and refuses what the data folder's disk cannot hold;
    a member whose size is not the manifest's is damaged."""
    import shutil

    from medvidbench.server.services import restores

    with tarfile.open(good_archive, "r:gz") as tar:
        unpacked = sum(m.size for m in tar if m.name != "manifest.json")
        database = tar.getmember("database/medvidbench.sqlite3").size
    target = tmp_path / "fresh"
    real = shutil.disk_usage
    needed = unpacked + database  # the SQLite database is unpacked, then copied into place
    for free, refused in ((needed - 1, True), (needed, False)):
        monkeypatch.setattr(
            restores.shutil, "disk_usage", lambda path, f=free: real(path)._replace(free=f)
        )
        runtime = fresh(target / str(free), None)  # a server that has never run
        if refused:
            with pytest.raises(UsageError, match=r"MiB, more than the .* MiB free.*nothing"):
                restore(runtime, good_archive)
            assert not runtime.data_dir.exists() or not list(stored_files(runtime.data_dir))
        else:
            restore(runtime, good_archive)
            assert list(stored_files(runtime.data_dir))
        runtime.engine.dispose()
    monkeypatch.undo()

    def lie(manifest: dict[str, Any]) -> None:  # a size the member does not have; its digest
        name = next(n for n in manifest["members"] if n.startswith("files/"))
        manifest["members"][name]["size"] += 1

    lying = rewrite(good_archive, tmp_path / "lying.tar.gz", {}, {}, edit=lie)
    done = cli("restore", str(lying), "--data-dir", str(tmp_path / "other"))
    assert done.returncode == 2 and "is damaged" in done.stderr, done.stderr


def test_backup_is_read_only_and_refused_revisions_are_explained(
    tmp_path: Path, served: Runtime
) -> None:
    """A backup does not migrate (the rollback it is for needs the old schema); an archive of a
    newer release's database is refused by name, not with a migration traceback."""
    from tests.server.test_migrations import migrate_to

    old = fresh(tmp_path, None)
    migrate_to(old.engine, "0009")
    made = cli("backup", str(tmp_path / "old.tar.gz"), "--data-dir", str(old.data_dir))
    assert made.returncode == 0, made.stderr
    assert current_revision(old.engine) == "0009"  # untouched
    with tarfile.open(tmp_path / "old.tar.gz") as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert manifest["revision"] == "0009"
    old.engine.dispose()

    newer = tmp_path / "newer"
    served_db = served.data_dir / "medvidbench.sqlite3"
    with served.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    made = cli(
        "backup", str(tmp_path / "from-the-future.tar.gz"), "--data-dir", str(served.data_dir)
    )
    assert made.returncode == 0 and "Traceback" not in made.stderr, made.stderr
    assert served_db.exists()
    done = cli("restore", str(tmp_path / "from-the-future.tar.gz"), "--data-dir", str(newer))
    assert done.returncode == 2 and "migration 9999" in done.stderr, done.stderr
    assert "newer release" in done.stderr and "Traceback" not in done.stderr


def test_backup_destinations(tmp_path: Path, served: Runtime) -> None:
    """A folder ending in / is made (the nightly line's first run); a name that is neither a
    folder nor an archive is refused instead of becoming a file named like a folder; a folder
    that cannot be written is an error message, not a traceback."""
    nightly = tmp_path / "backups" / "medvidbench"
    made = cli("backup", f"{nightly}/", "--data-dir", str(served.data_dir))
    assert made.returncode == 0, made.stderr
    [written] = nightly.iterdir()
    assert written.name.startswith("medvidbench-") and written.name.endswith(".tar.gz")
    wrong = cli("backup", str(tmp_path / "medvidbench"), "--data-dir", str(served.data_dir))
    assert wrong.returncode == 2 and "ending in .tar.gz" in wrong.stderr
    assert not (tmp_path / "medvidbench").exists()
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.geteuid() != 0:  # root writes anywhere
        denied = cli("backup", f"{locked}/sub/", "--data-dir", str(served.data_dir))
        assert denied.returncode == 2 and "Traceback" not in denied.stderr


def test_a_service_users_home_holds_only_server_files(tmp_path: Path, served: Runtime) -> None:
    """With ``useradd --create-home`` the data folder is the user's home: its dotfiles and model
    cache are not backed up, and a fresh home restores without --force."""
    (served.data_dir / ".bashrc").write_text("# shell")
    cache = served.data_dir / ".cache" / "medvidbench"
    cache.mkdir(parents=True)
    (cache / "weights.bin").write_bytes(os.urandom(4096))
    names = [name for name, _ in stored_files(served.data_dir)]
    assert names and all(kept_name(n) for n in names)
    assert not any(n.startswith(".") or "/." in n for n in names)
    archive = backup(served, tmp_path / "home.tar.gz").path
    home = tmp_path / "fresh"  # fresh()'s data folder
    home.mkdir()
    (home / ".bashrc").write_text("# shell")
    (home / ".profile").write_text("# profile")
    target = fresh(tmp_path, None)
    restore(target, archive)
    assert snapshot(target)["files"] == snapshot(served)["files"]
    assert (home / ".profile").read_text() == "# profile"
    target.engine.dispose()
