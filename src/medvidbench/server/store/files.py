"""Stored files: uploads, the files kept between steps and test sets, in a folder or the database.

Every stored file is gzip-compressed (level 1, the standard library's; zstd is not a
dependency) and named by a *kind* and a key the server chose (a submission id or a test set's
sha256), never by user input:

- ``submission`` (key: the submission id): the upload, ``submissions/00000042.json.gz``
- ``matched`` (the submission id): ``submissions/00000042.matched.msgpack.gz``
- ``scored`` (the submission id): ``submissions/00000042.scored.msgpack.gz``
- ``test-set`` (the test set's sha256): ``benchmarks/<sha256>.json.gz``
- ``judge-card`` (the test set's sha256): its judge agreement card,
  ``benchmarks/<sha256>.judge-card.json.gz``

(the paths are the folder layout, under the data folder).

:class:`FolderFiles` keeps them in the data folder (the embedded default: one machine).
:class:`DatabaseFiles` keeps them in the ``stored_files`` table, the compressed bytes in parts
of :data:`PART_BYTES`, so that a worker on another machine needs only the database, the queue
and the judge. It reads a file the table does not hold from the folder, so that a deployment
whose files are still on disk keeps working; :meth:`DatabaseFiles.move_folder_into_database`
moves them in (``medvidbench db move-files-into-database``).

An upload is compressed into a private file under ``incoming/`` first (the runtime's ``stage``,
outside any transaction), then put in place by :meth:`FolderFiles.place` inside the transaction
that creates its submission: renamed in the folder, inserted part by part in the database (the
same transaction, so a submission row never exists without its file, nor a file without it).
"""

from __future__ import annotations

import gzip
import logging
import os
import threading
import zlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import StoredFile

log = logging.getLogger(__name__)

Kind = Literal["submission", "matched", "scored", "test-set", "judge-card"]
KINDS: tuple[Kind, ...] = ("submission", "matched", "scored", "test-set", "judge-card")
_BY_TEST_SET: dict[Kind, str] = {"test-set": ".json.gz", "judge-card": ".judge-card.json.gz"}
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
PART_BYTES = 4 << 20  # compressed bytes per row: a 1 GiB upload (~100 MB gzipped) is ~25 rows
_SUFFIX = {
    "submission": ".json.gz",
    "matched": ".matched.msgpack.gz",
    "scored": ".scored.msgpack.gz",
}


def private_dir(path: Path) -> None:
    """Create ``path`` (and parents) if needed, and make it the owner's alone."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    if path.stat().st_mode & 0o777 != PRIVATE_DIR:
        path.chmod(PRIVATE_DIR)


def write_gzip(path: Path, chunks: Iterable[bytes]) -> None:
    """Compress ``chunks`` into ``path``, a file only its owner can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as out:
        for chunk in chunks:
            out.write(chunk)


def _check_key(kind: Kind, key: int | str) -> str:
    """The key as stored, checked: an id for a submission's files, a sha256 for a test set's."""
    if kind in _BY_TEST_SET:
        sha = str(key)
        if len(sha) != 64 or not all(c in "0123456789abcdef" for c in sha):
            raise ValueError("not a sha256 digest")
        return sha
    if kind not in _SUFFIX:
        raise ValueError(f"unknown kind of stored file {kind!r}")
    return f"{int(key):08d}"


def _parts(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while part := fh.read(PART_BYTES):
            yield part


class FolderFiles:
    """Stored files in the data folder (the embedded default)."""

    where = "folder"

    def __init__(self, root: Path) -> None:
        self.root = root

    def _folder(self, name: str) -> Path:
        directory = self.root / name
        private_dir(directory)
        return directory

    def path(self, kind: Kind, key: int | str) -> Path:
        """Where ``kind``/``key`` is (or would be) in the folder."""
        name = _check_key(kind, key)
        if kind in _BY_TEST_SET:
            return self._folder("benchmarks") / f"{name}{_BY_TEST_SET[kind]}"
        return self._folder("submissions") / f"{name}{_SUFFIX[kind]}"

    def place(self, session: Session, kind: Kind, key: int | str, staged: Path) -> None:
        """Put a staged compressed file in place as ``kind``/``key``, inside ``session``'s
        transaction (the folder renames it at once)."""
        staged.replace(self.path(kind, key))

    def write(self, kind: Kind, key: int | str, data: bytes) -> None:
        """Store ``data`` compressed; a reader never sees half of it."""
        path = self.path(kind, key)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        write_gzip(tmp, [data])
        os.replace(tmp, path)

    def read(self, kind: Kind, key: int | str) -> bytes | None:
        """The file's bytes, decompressed (None: not stored)."""
        try:
            with gzip.open(self.path(kind, key), "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            return None

    def local(self, kind: Kind, key: int | str) -> Path | None:
        """A compressed copy of the file on this machine's disk (for a child process), or None."""
        path = self.path(kind, key)
        return path if path.exists() else None

    def delete(self, kind: Kind, key: int | str) -> None:
        self.path(kind, key).unlink(missing_ok=True)

    def exists(self, kind: Kind, key: int | str) -> bool:
        return self.path(kind, key).exists()


class DatabaseFiles(FolderFiles):
    """Stored files in the database's ``stored_files`` table; the folder is read for files
    stored there before (and holds only ``incoming/`` scratch files and a local cache of test
    sets for the child process that checks large uploads)."""

    where = "database"

    def __init__(self, root: Path, sessions: sessionmaker[Session]) -> None:
        super().__init__(root)
        self.sessions = sessions

    @staticmethod
    def _insert(session: Session, kind: Kind, name: str, parts: Iterable[bytes]) -> int:
        """Insert the compressed parts one row at a time (memory: one part); their size."""
        now, size = datetime.now(UTC), 0
        for number, part in enumerate(parts):
            session.execute(
                insert(StoredFile).values(
                    kind=kind, name=name, part=number, data=part, created_at=now
                )
            )
            size += len(part)
        return size

    def place(self, session: Session, kind: Kind, key: int | str, staged: Path) -> None:
        name = _check_key(kind, key)
        session.execute(delete(StoredFile).where(StoredFile.kind == kind, StoredFile.name == name))
        self._insert(session, kind, name, _parts(staged))
        staged.unlink(missing_ok=True)  # the caller removes it too should the transaction fail

    def write(self, kind: Kind, key: int | str, data: bytes) -> None:
        name = _check_key(kind, key)
        packed = gzip.compress(data, compresslevel=1)
        chunks = [packed[i : i + PART_BYTES] for i in range(0, len(packed), PART_BYTES)]
        try:
            with transaction(self.sessions) as session:
                session.execute(
                    delete(StoredFile).where(StoredFile.kind == kind, StoredFile.name == name)
                )
                self._insert(session, kind, name, chunks or [b""])
        except IntegrityError:  # another process stored the same file at the same moment
            log.info("%s %s was stored by another process meanwhile", kind, name)

    def _stored_parts(self, kind: Kind, name: str) -> Iterator[bytes] | None:
        with self.sessions() as session:
            count = session.scalar(
                select(func.count())
                .select_from(StoredFile)
                .where(StoredFile.kind == kind, StoredFile.name == name)
            )
        if not count:
            return None

        def parts() -> Iterator[bytes]:
            with self.sessions() as session:
                for number in range(count):
                    yield (
                        session.scalar(
                            select(StoredFile.data).where(
                                StoredFile.kind == kind,
                                StoredFile.name == name,
                                StoredFile.part == number,
                            )
                        )
                        or b""
                    )

        return parts()

    def read(self, kind: Kind, key: int | str) -> bytes | None:
        parts = self._stored_parts(kind, _check_key(kind, key))
        if parts is None:
            return super().read(kind, key)  # stored on disk before the files moved in
        out = bytearray()
        inflate = zlib.decompressobj(wbits=31)  # gzip, decompressed part by part
        for part in parts:
            out += inflate.decompress(part)
        out += inflate.flush()
        if not inflate.eof:
            raise EOFError(f"stored {kind} {key} is cut short")
        return bytes(out)

    def local(self, kind: Kind, key: int | str) -> Path | None:
        on_disk = super().local(kind, key)
        if on_disk is not None:
            return on_disk
        name = _check_key(kind, key)
        cached = self._folder(f"cache/{kind}") / f"{name}.gz"
        if not cached.exists():
            parts = self._stored_parts(kind, name)
            if parts is None:
                return None
            tmp = cached.with_name(f"{cached.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    out.write(part)
            os.replace(tmp, cached)
        return cached

    def delete(self, kind: Kind, key: int | str) -> None:
        name = _check_key(kind, key)
        with transaction(self.sessions) as session:
            session.execute(
                delete(StoredFile).where(StoredFile.kind == kind, StoredFile.name == name)
            )
        super().delete(kind, key)

    def exists(self, kind: Kind, key: int | str) -> bool:
        return self._stored_parts(kind, _check_key(kind, key)) is not None or super().exists(
            kind, key
        )

    def move_folder_into_database(self) -> dict[str, int]:
        """Move every stored file still in the folder into the table (each in its own
        transaction, the file removed once committed); how many of each kind were moved.
        Files the table already holds are removed from the folder."""
        moved: dict[str, int] = {kind: 0 for kind in KINDS}
        for kind, key, path in self._folder_files():
            name = _check_key(kind, key)
            with transaction(self.sessions) as session:
                held = session.scalar(
                    select(func.count())
                    .select_from(StoredFile)
                    .where(StoredFile.kind == kind, StoredFile.name == name)
                )
                if not held:
                    self._insert(session, kind, name, _parts(path))
                    moved[kind] += 1
            path.unlink(missing_ok=True)
        return moved

    def _folder_files(self) -> Iterator[tuple[Kind, str, Path]]:
        """The stored files in the folder layout, by kind and key (other files are ignored)."""
        for path in sorted((self.root / "benchmarks").glob("*.json.gz")):
            sha, _, suffix = path.name.partition(".")
            by_sha = next((k for k, s in _BY_TEST_SET.items() if "." + suffix == s), None)
            if by_sha is not None and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha):
                yield by_sha, sha, path
        for path in sorted((self.root / "submissions").glob("*.gz")):
            number, _, rest = path.name.partition(".")
            kind = next((k for k, s in _SUFFIX.items() if "." + rest == s), None)
            if kind is not None and number.isdigit():
                yield kind, number, path  # type: ignore[misc]
