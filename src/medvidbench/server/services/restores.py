"""Restoring a backup archive (:mod:`.backups`) into a server with nothing in it.

Every member is checked against the archive's manifest before anything is written; the files
are unpacked into a private folder inside the data folder, the database is replaced in one
transaction, and the stored files are swapped in only after it, so a restore that fails leaves
the server as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy import inspect

from medvidbench.core.errors import UsageError
from medvidbench.server.runtime import PRIVATE_FILE, Runtime, private_dir
from medvidbench.server.services.backups import (
    CHUNK,
    FORMAT,
    MANIFEST,
    MEMBER_PART,
    PG_MEMBER,
    SQLITE_MEMBER,
    BackupSummary,
    is_sqlite,
    kept_name,
    libpq,
    pg_program,
    run_program,
    server_major,
    sqlite_file,
    stored_files,
)
from medvidbench.server.store.db import known_revisions
from medvidbench.version import __version__

# What a restore trusts: the archive's manifest travels inside it, so its hashes find damage,
# not tampering. Whatever the archive says, a restore writes only the server's own files
# (kept_name) inside the data folder, never through a symbolic link, and the database; a
# PostgreSQL dump is SQL run as the server's database user, so restore only archives you made.


def _member_ok(name: str) -> bool:
    """The database, or a ``files/`` member whose name stays inside the folder it is restored
    into: every part a plain name (so no empty part, as in ``files//etc/passwd``, no ``.`` or
    ``..``, no leading dot)."""
    if name in (SQLITE_MEMBER, PG_MEMBER):
        return True
    parts = name.split("/")
    return parts[0] == "files" and len(parts) > 1 and all(map(MEMBER_PART.fullmatch, parts[1:]))


def _digest(stream: Any) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: stream.read(CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def check_archive(source: Path) -> dict[str, Any]:
    """The archive's manifest, once every member was found whole and as the manifest says.

    Raises:
        UsageError: not a readable archive, a member missing, changed, unlisted, not a regular
            file, or named as no backup names one (``files//etc/x``, ``files/../x``, ...).
    """
    try:
        with tarfile.open(source, mode="r:gz") as tar:
            found = tar.getmember(MANIFEST) if MANIFEST in tar.getnames() else None
            reader = tar.extractfile(found) if found is not None else None
            if reader is None:
                raise UsageError(f"{source} is not a medvidbench backup (no {MANIFEST})")
            manifest: dict[str, Any] = json.loads(reader.read())
            if manifest.get("format") != FORMAT:
                raise UsageError(f"{source}: unknown backup format {manifest.get('format')!r}")
            listed: dict[str, Any] = manifest["members"]
            seen = set()
            for info in tar:
                if info.name == MANIFEST:
                    continue
                if info.name not in listed or not info.isfile() or not _member_ok(info.name):
                    raise UsageError(f"{source}: unexpected member {info.name!r}")
                stream = tar.extractfile(info)
                assert stream is not None  # a regular file
                if info.size != listed[info.name]["size"]:  # what unpacking it would write
                    raise UsageError(f"{source}: member {info.name!r} is damaged")
                if _digest(stream) != listed[info.name]["sha256"]:
                    raise UsageError(f"{source}: member {info.name!r} is damaged")
                seen.add(info.name)
    except (tarfile.TarError, OSError, EOFError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{source} cannot be read as a backup: {exc}") from None
    missing = set(listed) - seen
    if missing:
        raise UsageError(f"{source}: members missing: {', '.join(sorted(missing))}")
    return manifest


def holds_data(runtime: Runtime) -> list[str]:
    """What the target server already holds (empty: nothing, a restore may go ahead)."""
    found = []
    with runtime.engine.connect() as conn:
        tables = inspect(conn).get_table_names()
    if tables:
        found.append(f"the database has {len(tables)} tables")
    files = sum(1 for _ in stored_files(runtime.data_dir))
    if files:
        found.append(f"the data folder {runtime.data_dir} has {files} stored files")
    return found


def _check_revision(source: Path, manifest: dict[str, Any]) -> None:
    revision = manifest.get("revision")
    if revision is not None and revision not in known_revisions():
        raise UsageError(
            f"{source} holds a database at migration {revision}, which this release "
            f"(medvidbench {__version__}) does not know: it was made by a newer release "
            f"({manifest.get('medvidbench')}); restore it with that release or a newer one"
        )


def _real_folder(data_dir: Path, relative: PurePosixPath) -> Path:
    """The data folder's sub-folder ``relative``, made if missing, refused if any part of it
    is a symbolic link (a restore never writes through one)."""
    here = data_dir
    for part in relative.parts:
        here = here / part
        if here.is_symlink():
            raise UsageError(f"{here} is a symbolic link: a restore writes only real folders")
        private_dir(here)
    return here


def _check_space(source: Path, manifest: dict[str, Any], member: str, data_dir: Path) -> None:
    """Refuse, before anything is written, an archive that would not fit in the data folder:
    every member unpacked there (as the checked sizes say; a few MB of gzip can hold GBs), and
    a SQLite database twice (unpacked, then copied into place)."""
    sizes = manifest["members"]
    needed = sum(m["size"] for m in sizes.values())
    if member == SQLITE_MEMBER:
        needed += sizes[member]["size"]
    nearest = data_dir
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    free = shutil.disk_usage(nearest).free
    if needed > free:
        raise UsageError(
            f"{source} unpacks to {needed / 2**20:,.1f} MiB, more than the "
            f"{free / 2**20:,.1f} MiB free where {data_dir} is; nothing was written"
        )


def _write_new(path: Path, stream: Any) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    with os.fdopen(os.open(path, flags, PRIVATE_FILE), "wb") as out:
        shutil.copyfileobj(stream, out, CHUNK)


def _stage_files(tar: tarfile.TarFile, staged: Path) -> tuple[list[str], list[str]]:
    """Unpack the archive's server files under ``staged`` (a new private folder); the names
    unpacked, and the members left out as not a server's files."""
    names, skipped = [], []
    for info in tar:
        if not info.name.startswith("files/"):
            continue
        name = info.name.removeprefix("files/")
        if not kept_name(name):
            skipped.append(name)
            continue
        target = _real_folder(staged, PurePosixPath(name).parent) / PurePosixPath(name).name
        stream = tar.extractfile(info)
        assert stream is not None  # checked: a regular file
        _write_new(target, stream)
        names.append(name)
    return names, skipped


def _copy_sqlite(source_path: Path, target_path: Path) -> None:
    """Every page of ``target_path`` replaced by ``source_path``'s, in one transaction of the
    target (a failure leaves it as it was), once the source was found a whole database.

    Raises:
        UsageError: the source is not a SQLite database, or a damaged one.
    """
    source = sqlite3.connect(f"{source_path.as_uri()}?mode=ro", uri=True)
    try:
        verdict = source.execute("PRAGMA quick_check").fetchone()
        if verdict != ("ok",):
            raise UsageError(f"the archive's database is damaged: {verdict[0] if verdict else ''}")
        target = sqlite3.connect(str(target_path))
        try:
            with target:
                source.backup(target)
        finally:
            target.close()
    except sqlite3.DatabaseError as exc:
        raise UsageError(f"restoring the database failed (nothing was changed): {exc}") from None
    finally:
        source.close()


def _restore_postgres(runtime: Runtime, dump: Path, work: Path) -> None:
    """Drop the target's tables and load the dump in ONE transaction: if any statement fails,
    the database is left exactly as it was (pg_restore's own --single-transaction cannot hold
    the drops, so the dump is turned into SQL and run by psql)."""
    uri, env = libpq(runtime)
    major = server_major(runtime)
    script = work / "restore.sql"
    options = ["--no-owner", "--no-privileges", f"--file={script}", str(dump)]
    run_program([pg_program("pg_restore", major), *options], env, "pg_restore")
    with runtime.engine.connect() as conn:
        tables = inspect(conn).get_table_names()
    drops = work / "drop.sql"
    drops.write_text("".join(f'DROP TABLE IF EXISTS "{t}" CASCADE;\n' for t in tables))
    runtime.engine.dispose()
    psql = pg_program("psql", major)
    run_program(
        [
            *(psql, "--no-psqlrc", "--quiet", "--set=ON_ERROR_STOP=1", "--single-transaction"),
            *(f"--dbname={uri}", f"--file={drops}", f"--file={script}"),
        ],
        env,
        "loading the dump (nothing was changed)",
    )


def _restore_database(runtime: Runtime, tar: tarfile.TarFile, member: str, work: Path) -> None:
    dump = work / "database"
    stream = tar.extractfile(member)
    assert stream is not None  # checked: a regular file
    _write_new(dump, stream)
    if is_sqlite(runtime):
        runtime.engine.dispose()
        _copy_sqlite(dump, Path(str(sqlite_file(runtime))))
    else:
        _restore_postgres(runtime, dump, work)


def _swap_files(data_dir: Path, staged: Path, names: list[str], old: Path) -> None:
    """Put the staged files in place of the folder's stored files; the replaced ones are moved
    to ``old`` (and back, if a move fails half way)."""
    moved: list[tuple[Path, Path]] = []
    try:
        for name, path in list(stored_files(data_dir)):
            aside = _real_folder(old, PurePosixPath(name).parent) / PurePosixPath(name).name
            os.replace(path, aside)
            moved.append((aside, path))
        for name in names:
            target = _real_folder(data_dir, PurePosixPath(name).parent) / PurePosixPath(name).name
            os.replace(staged / name, target)
    except BaseException:
        for name in names:
            (data_dir / name).unlink(missing_ok=True)
        for aside, path in moved:
            os.replace(aside, path)
        raise


def restore(runtime: Runtime, source: Path, force: bool = False) -> BackupSummary:
    """Restore the archive ``source`` into this server's database and data folder.

    Everything is checked and unpacked before anything is replaced; the database is replaced
    in one transaction, and the stored files only after it, so a restore that fails leaves the
    server as it was.

    Raises:
        UsageError: the archive is damaged, crafted, of the other database kind or of a newer
            release, would not fit in the data folder's free space, or the target holds data
            already and ``force`` is not given.
    """
    manifest = check_archive(source)
    kind = "sqlite" if is_sqlite(runtime) else "postgresql"
    if manifest["database"] != kind:
        raise UsageError(
            f"{source} holds a {manifest['database']} database; this server uses {kind}"
        )
    _check_revision(source, manifest)
    present = holds_data(runtime)
    if present and not force:
        raise UsageError(
            f"refusing to restore over existing data ({'; '.join(present)}); "
            "restore into an empty server, or pass --force to replace it"
        )
    member = SQLITE_MEMBER if kind == "sqlite" else PG_MEMBER
    _check_space(source, manifest, member, runtime.data_dir)
    private_dir(runtime.data_dir)
    with (
        tempfile.TemporaryDirectory(dir=runtime.data_dir, prefix=".restore-") as tmp,
        tarfile.open(source, mode="r:gz") as tar,
    ):
        work = Path(tmp)
        names, skipped = _stage_files(tar, _real_folder(work, PurePosixPath("files")))
        _restore_database(runtime, tar, member, work)
        _swap_files(runtime.data_dir, work / "files", names, work / "old")
    total = sum(m["size"] for m in manifest["members"].values())
    return BackupSummary(source, kind, len(names), total, tuple(skipped))
