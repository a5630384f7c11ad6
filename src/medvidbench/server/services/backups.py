"""Backing up a server (its database and its data folder's files) into one archive, which
:mod:`.restores` restores into a server with nothing in it.

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
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, inspect, make_url, text

from medvidbench.core.errors import UsageError
from medvidbench.server.runtime import PRIVATE_FILE, Runtime
from medvidbench.server.store.db import database_url
from medvidbench.version import __version__

FORMAT = 1
MANIFEST = "manifest.json"
SQLITE_MEMBER = "database/medvidbench.sqlite3"
PG_MEMBER = "database/medvidbench.pgdump"
# What of the data folder a backup holds: the files the server itself keeps there (its
# generated secret key, uploads and the files kept between steps, test sets, demo files), and
# nothing else. The SQLite database is copied through the backup API; the job queue is not
# kept (the reaper re-queues unfinished work after a restore); uploads still arriving, caches
# and whatever else shares the folder (a service user's dotfiles and model cache, when the
# folder is its home) are not the server's to copy or to replace.
_KEPT_FILES = ("secret_key",)
_KEPT_FOLDERS = ("benchmarks", "demo", "submissions")
MEMBER_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")
_HALF_WRITTEN = re.compile(r"\.(tmp|partial)$")
CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class BackupSummary:
    """What a backup or a restore moved (``skipped``: archive members a restore left out
    because they are not files a server keeps)."""

    path: Path
    database: str  # sqlite or postgresql
    files: int
    bytes: int
    skipped: tuple[str, ...] = ()


# --- the data folder ---------------------------------------------------------------------------


def kept_name(name: str) -> bool:
    """Whether ``name`` (relative, POSIX) is a file the server keeps in its data folder: the
    secret key, or a plain name inside one of its folders, with no part that could leave the
    folder or hide in it (empty, ``.``, ``..``, a leading dot, a backslash)."""
    parts = name.split("/")
    if not all(MEMBER_PART.fullmatch(part) for part in parts) or _HALF_WRITTEN.search(name):
        return False
    return name in _KEPT_FILES or (len(parts) > 1 and parts[0] in _KEPT_FOLDERS)


def stored_files(data_dir: Path) -> Iterator[tuple[str, Path]]:
    """The data folder's files a backup holds, as (relative POSIX name, path), sorted: the
    server's own (:func:`kept_name`), never through a symbolic link."""
    found = [(name, data_dir / name) for name in _KEPT_FILES]
    for top in _KEPT_FOLDERS:
        root = data_dir / top
        if root.is_symlink() or not root.is_dir():
            continue
        for folder, dirs, names in os.walk(root):
            here = Path(folder)
            dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
            found += [((here / n).relative_to(data_dir).as_posix(), here / n) for n in names]
    for name, path in sorted(found):
        if kept_name(name) and not path.is_symlink() and path.is_file():
            yield name, path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --- PostgreSQL's programs ---------------------------------------------------------------------


def sqlite_file(runtime: Runtime) -> Path | None:
    """The SQLite database's file (None: the server uses PostgreSQL), found without opening
    it (the engine would create a missing one)."""
    url = make_url(database_url(runtime.data_dir, runtime.settings.database_url))
    return Path(str(url.database)) if url.get_backend_name() == "sqlite" else None


def is_sqlite(runtime: Runtime) -> bool:
    return sqlite_file(runtime) is not None


def server_major(runtime: Runtime) -> int:
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


def libpq(runtime: Runtime) -> tuple[str, dict[str, str]]:
    """The database as a libpq URI (without its password) and the environment that carries
    the password, for the PostgreSQL programs."""
    url = make_url(runtime.engine.url.render_as_string(hide_password=False))
    env = dict(os.environ)
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    uri = url.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    return uri, env


def run_program(command: list[str], env: dict[str, str], what: str) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise UsageError(f"{what} failed: {done.stderr.strip()[-2000:]}")


# --- backup ------------------------------------------------------------------------------------


def _revision(conn: Any) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    found = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    return None if found is None else str(found)


def _dump_database(runtime: Runtime, work: Path) -> tuple[str, Path, str | None]:
    """The database copied into ``work``: its member name, the copy and its migration."""
    database = sqlite_file(runtime)
    if database is not None:
        if not database.is_file():
            raise UsageError(f"no database at {database}: nothing to back up (wrong --data-dir?)")
        target = work / "db.sqlite3"
        # read-only: a backup never creates, migrates or otherwise writes the live database
        source = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
        copy = sqlite3.connect(str(target))
        try:
            with copy:
                source.backup(copy)  # consistent while the server writes
        finally:
            copy.close()
            source.close()
        copied = create_engine(f"sqlite:///{target}")
        with copied.connect() as conn:
            revision = _revision(conn)
        copied.dispose()
        return SQLITE_MEMBER, target, revision
    target = work / "db.pgdump"
    uri, env = libpq(runtime)
    program = pg_program("pg_dump", server_major(runtime))
    with runtime.engine.connect() as conn:
        revision = _revision(conn)
    run_program([program, "--format=custom", f"--file={target}", f"--dbname={uri}"], env, "pg_dump")
    return PG_MEMBER, target, revision


def archive_path(dest: str | Path) -> Path:
    """Where ``backup`` writes: ``dest`` itself when it names a ``.tar.gz`` file; a new file
    named by the time when it is a folder (one that exists, or any ``dest`` ending in ``/``,
    created if missing).

    Raises:
        UsageError: ``dest`` names neither, or the folder cannot be made.
    """
    text = str(dest)
    path = Path(text)
    if text.endswith(("/", os.sep)) or path.is_dir():
        try:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise UsageError(f"cannot create the backup folder {path}: {exc.strerror}") from None
        return path / f"medvidbench-{datetime.now(UTC):%Y%m%d-%H%M%S}.tar.gz"
    if not path.name.endswith((".tar.gz", ".tgz")):
        raise UsageError(
            f"{text}: name an archive ending in .tar.gz, or a folder ending in / "
            "(the archive is then named by the time)"
        )
    return path


def backup(runtime: Runtime, dest: str | Path) -> BackupSummary:
    """Write the server's database and stored files into an archive (see :func:`archive_path`)
    atomically: a half-written archive never has the name. Nothing of the server is written:
    the database is read as it is, at whatever migration it is.

    Raises:
        UsageError: the archive exists already, its folder cannot be written, there is no
            database, or it could not be dumped.
    """
    dest = archive_path(dest)
    if dest.exists():
        raise UsageError(f"{dest} exists already; name a new file (or a folder)")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {dest.parent}: {exc.strerror}") from None
    if not os.access(dest.parent, os.W_OK):
        raise UsageError(f"cannot write a backup into {dest.parent}: permission denied")
    partial = dest.with_name(dest.name + ".partial")
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".mvb-backup-") as tmp:
        member, dump, revision = _dump_database(runtime, Path(tmp))
        entries = [(member, dump)] + [
            (f"files/{name}", path) for name, path in stored_files(runtime.data_dir)
        ]
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "medvidbench": __version__,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "database": "sqlite" if is_sqlite(runtime) else "postgresql",
            "revision": revision,
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
#
