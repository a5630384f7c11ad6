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

from sqlalchemy import create_engine, inspect, make_url, text

from medvidbench.core.errors import UsageError
from medvidbench.server.runtime import PRIVATE_FILE, Runtime, private_dir
from medvidbench.server.store.db import database_url, known_revisions
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
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")
_HALF_WRITTEN = re.compile(r"\.(tmp|partial)$")
_CHUNK = 1 << 20


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
    if not all(_PART.fullmatch(part) for part in parts) or _HALF_WRITTEN.search(name):
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
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --- PostgreSQL's programs ---------------------------------------------------------------------


def _sqlite_file(runtime: Runtime) -> Path | None:
    """The SQLite database's file (None: the server uses PostgreSQL), found without opening
    it (the engine would create a missing one)."""
    url = make_url(database_url(runtime.data_dir, runtime.settings.database_url))
    return Path(str(url.database)) if url.get_backend_name() == "sqlite" else None


def _is_sqlite(runtime: Runtime) -> bool:
    return _sqlite_file(runtime) is not None


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


def _revision(conn: Any) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    found = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    return None if found is None else str(found)


def _dump_database(runtime: Runtime, work: Path) -> tuple[str, Path, str | None]:
    """The database copied into ``work``: its member name, the copy and its migration."""
    database = _sqlite_file(runtime)
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
    uri, env = _libpq(runtime)
    program = pg_program("pg_dump", _server_major(runtime))
    with runtime.engine.connect() as conn:
        revision = _revision(conn)
    _run([program, "--format=custom", f"--file={target}", f"--dbname={uri}"], env, "pg_dump")
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
            "database": "sqlite" if _is_sqlite(runtime) else "postgresql",
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
    return parts[0] == "files" and len(parts) > 1 and all(map(_PART.fullmatch, parts[1:]))


def _digest(stream: Any) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: stream.read(_CHUNK), b""):
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


def _write_new(path: Path, stream: Any) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    with os.fdopen(os.open(path, flags, PRIVATE_FILE), "wb") as out:
        shutil.copyfileobj(stream, out, _CHUNK)


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
    uri, env = _libpq(runtime)
    major = _server_major(runtime)
    script = work / "restore.sql"
    options = ["--no-owner", "--no-privileges", f"--file={script}", str(dump)]
    _run([pg_program("pg_restore", major), *options], env, "pg_restore")
    with runtime.engine.connect() as conn:
        tables = inspect(conn).get_table_names()
    drops = work / "drop.sql"
    drops.write_text("".join(f'DROP TABLE IF EXISTS "{t}" CASCADE;\n' for t in tables))
    runtime.engine.dispose()
    psql = pg_program("psql", major)
    _run(
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
    if _is_sqlite(runtime):
        runtime.engine.dispose()
        _copy_sqlite(dump, Path(str(_sqlite_file(runtime))))
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
            release, or the target holds data already and ``force`` is not given.
    """
    manifest = check_archive(source)
    kind = "sqlite" if _is_sqlite(runtime) else "postgresql"
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
