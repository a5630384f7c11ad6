"""Backing up a server (its database and its data folder's files) into one archive, and
restoring one into a server with nothing in it.

The archive is a gzipped tar: ``manifest.json`` (what it holds, with each member's size and
sha256), the database (SQLite: a copy made with SQLite's online backup, consistent while the
server runs; PostgreSQL: ``pg_dump --format=custom``, with the programs of the server's own
major version) and ``files/``: the data folder's stored files, without the database, the job
queue or uploads still arriving. A restore checks every member against the manifest before it
writes anything, and refuses a database or folder that already holds data unless forced.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy import inspect, make_url, text

from medvidbench.core.errors import UsageError
from medvidbench.server.runtime import PRIVATE_FILE, Runtime, private_dir
from medvidbench.version import __version__

FORMAT = 1
MANIFEST = "manifest.json"
SQLITE_MEMBER = "database/medvidbench.sqlite3"
PG_MEMBER = "database/medvidbench.pgdump"
# What the data folder holds that is not copied as a file: the SQLite database (copied
# through the backup API), the job queue (the reaper re-queues unfinished work after a
# restore), uploads still arriving and half-written files.
_SKIPPED_NAMES = re.compile(
    r"^(medvidbench|queue)\.sqlite3(-wal|-shm|-journal)?$|\.tmp$|\.partial$"
)
_SKIPPED_FOLDERS = {"incoming"}
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class BackupSummary:
    """What a backup or a restore moved."""

    path: Path
    database: str  # sqlite or postgresql
    files: int
    bytes: int


# --- the data folder ---------------------------------------------------------------------------


def stored_files(data_dir: Path) -> Iterator[tuple[str, Path]]:
    """The data folder's files a backup holds, as (relative POSIX name, path), sorted."""
    for folder, dirs, names in os.walk(data_dir):
        here = Path(folder)
        dirs[:] = sorted(
            d
            for d in dirs
            if not (here == data_dir and d in _SKIPPED_FOLDERS) and not (here / d).is_symlink()
        )
        for name in sorted(names):
            path = here / name
            if _SKIPPED_NAMES.search(name) or path.is_symlink() or not path.is_file():
                continue
            yield path.relative_to(data_dir).as_posix(), path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --- PostgreSQL's programs ---------------------------------------------------------------------


def _is_sqlite(runtime: Runtime) -> bool:
    return runtime.engine.dialect.name == "sqlite"


def _server_major(runtime: Runtime) -> int:
    with runtime.engine.connect() as conn:
        return int(conn.execute(text("SHOW server_version_num")).scalar_one()) // 10000


def _major_of(program: str) -> int | None:
    try:
        out = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    found = re.search(r"\(PostgreSQL\)\s+(\d+)", out.stdout)
    return int(found.group(1)) if found else None


def pg_program(name: str, server_major: int) -> str:
    """``pg_dump`` or ``pg_restore`` of the server's major version (Debian keeps each version
    under /usr/lib/postgresql/N/bin), else a newer one, else the one on PATH if new enough.

    Raises:
        UsageError: no such program new enough for the server.
    """
    candidates = [Path(f"/usr/lib/postgresql/{server_major}/bin/{name}")]
    newer = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    candidates += [p for p in newer if p.parent.parent.name.isdigit()]
    on_path = shutil.which(name)
    seen = [str(p) for p in candidates if p.exists()] + ([on_path] if on_path else [])
    for program in seen:
        major = _major_of(program)
        if major is not None and major >= server_major:
            return program
    raise UsageError(
        f"no {name} for PostgreSQL {server_major} or newer was found (install the "
        f"postgresql-client-{server_major} package)"
    )


def _libpq(runtime: Runtime) -> tuple[str, dict[str, str]]:
    """The database as a libpq URI (without its password) and the environment that carries
    the password, for the PostgreSQL programs."""
    url = make_url(runtime.engine.url.render_as_string(hide_password=False))
    env = dict(os.environ)
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    uri = url.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    return uri, env


def _run(command: list[str], env: dict[str, str], what: str) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise UsageError(f"{what} failed: {done.stderr.strip()[-2000:]}")


# --- backup ------------------------------------------------------------------------------------


def _revision(runtime: Runtime) -> str | None:
    with runtime.engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _dump_database(runtime: Runtime, work: Path) -> tuple[str, Path]:
    if _is_sqlite(runtime):
        target = work / "db.sqlite3"
        source = sqlite3.connect(str(make_url(str(runtime.engine.url)).database))
        copy = sqlite3.connect(str(target))
        try:
            with copy:
                source.backup(copy)  # consistent while the server writes
        finally:
            copy.close()
            source.close()
        return SQLITE_MEMBER, target
    target = work / "db.pgdump"
    uri, env = _libpq(runtime)
    program = pg_program("pg_dump", _server_major(runtime))
    _run([program, "--format=custom", f"--file={target}", f"--dbname={uri}"], env, "pg_dump")
    return PG_MEMBER, target


def backup(runtime: Runtime, dest: Path) -> BackupSummary:
    """Write the server's database and stored files into the archive ``dest`` (in a folder:
    a new file named by the time), atomically: a half-written archive never has the name.

    Raises:
        UsageError: ``dest`` exists already, or the database could not be dumped.
    """
    if dest.is_dir():
        dest = dest / f"medvidbench-{datetime.now(UTC):%Y%m%d-%H%M%S}.tar.gz"
    if dest.exists():
        raise UsageError(f"{dest} exists already; name a new file (or a folder)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".mvb-backup-") as tmp:
        member, dump = _dump_database(runtime, Path(tmp))
        entries = [(member, dump)] + [
            (f"files/{name}", path) for name, path in stored_files(runtime.data_dir)
        ]
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "medvidbench": __version__,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "database": "sqlite" if _is_sqlite(runtime) else "postgresql",
            "revision": _revision(runtime),
            "members": {},
        }
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
        try:
            with (
                os.fdopen(fd, "wb") as raw,
                tarfile.open(fileobj=raw, mode="w:gz", compresslevel=1) as tar,
            ):
                for name, path in entries:
                    size = path.stat().st_size
                    manifest["members"][name] = {"size": size, "sha256": _sha256(path)}
                    tar.add(str(path), arcname=name, recursive=False)
                body = json.dumps(manifest, indent=2).encode()
                info = tarfile.TarInfo(MANIFEST)
                info.size, info.mode = len(body), PRIVATE_FILE
                tar.addfile(info, io.BytesIO(body))
            os.replace(partial, dest)
        finally:
            partial.unlink(missing_ok=True)
    total = sum(m["size"] for m in manifest["members"].values())
    return BackupSummary(dest, manifest["database"], len(entries) - 1, total)


# --- restore -----------------------------------------------------------------------------------


def _safe_name(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return bool(parts) and not name.startswith("/") and ".." not in parts and "\\" not in name


def _digest(stream: Any) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: stream.read(_CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def check_archive(source: Path) -> dict[str, Any]:
    """The archive's manifest, once every member was found whole and as the manifest says.

    Raises:
        UsageError: not a readable archive, a member missing, changed, unlisted or named
            outside the archive's folders.
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
                if info.name not in listed or not info.isfile() or not _safe_name(info.name):
                    raise UsageError(f"{source}: unexpected member {info.name!r}")
                stream = tar.extractfile(info)
                assert stream is not None  # a regular file
                if _digest(stream) != listed[info.name]["sha256"]:
                    raise UsageError(f"{source}: member {info.name!r} is damaged")
                seen.add(info.name)
    except (tarfile.TarError, OSError, EOFError, ValueError, KeyError) as exc:
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


def _restore_database(runtime: Runtime, tar: tarfile.TarFile, member: str, work: Path) -> None:
    dump = work / "database"
    stream = tar.extractfile(member)
    assert stream is not None  # checked: a regular file
    fd = os.open(dump, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(stream, out, _CHUNK)
    if _is_sqlite(runtime):
        runtime.engine.dispose()
        source = sqlite3.connect(str(dump))
        target = sqlite3.connect(str(make_url(str(runtime.engine.url)).database))
        try:
            with target:
                source.backup(target)  # replaces every page of the target
        finally:
            target.close()
            source.close()
        return
    uri, env = _libpq(runtime)
    if holds_data(runtime):  # forced: drop the target's tables first
        runtime.engine.dispose()
        with runtime.engine.begin() as conn:
            for table in inspect(conn).get_table_names():
                conn.execute(text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
    runtime.engine.dispose()
    program = pg_program("pg_restore", _server_major(runtime))
    _run(
        [
            program,
            "--no-owner",
            "--no-privileges",
            "--exit-on-error",
            "--single-transaction",
            f"--dbname={uri}",
            str(dump),
        ],
        env,
        "pg_restore",
    )


def restore(runtime: Runtime, source: Path, force: bool = False) -> BackupSummary:
    """Restore the archive ``source`` into this server's database and data folder.

    Raises:
        UsageError: the archive is damaged or of the other database kind, or the target holds
            data already and ``force`` is not given.
    """
    manifest = check_archive(source)
    kind = "sqlite" if _is_sqlite(runtime) else "postgresql"
    if manifest["database"] != kind:
        raise UsageError(
            f"{source} holds a {manifest['database']} database; this server uses {kind}"
        )
    present = holds_data(runtime)
    if present and not force:
        raise UsageError(
            f"refusing to restore over existing data ({'; '.join(present)}); "
            "restore into an empty server, or pass --force to replace it"
        )
    if present:
        for _, path in stored_files(runtime.data_dir):
            path.unlink()
    member = SQLITE_MEMBER if kind == "sqlite" else PG_MEMBER
    files = 0
    private_dir(runtime.data_dir)
    with (
        tempfile.TemporaryDirectory(dir=runtime.data_dir, prefix=".restore-") as tmp,
        tarfile.open(source, mode="r:gz") as tar,
    ):
        _restore_database(runtime, tar, member, Path(tmp))
        for info in tar:
            if not info.name.startswith("files/"):
                continue
            target = runtime.data_dir / info.name.removeprefix("files/")
            private_dir(target.parent)
            stream = tar.extractfile(info)
            assert stream is not None  # checked: a regular file
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(stream, out, _CHUNK)
            files += 1
    total = sum(m["size"] for m in manifest["members"].values())
    return BackupSummary(source, kind, files, total)
