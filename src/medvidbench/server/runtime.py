"""The running server's shared resources: settings, database, stored files, test sets.

One :class:`Runtime` per process (web server or worker), created explicitly; nothing here
happens at import time. Stored files are named by database ids and hashes, never by user input.
The data folder holds the hidden test set, the database and every upload, so it and everything
in it is the owner's alone: folders 0700, files 0600, whatever the process umask.
"""

from __future__ import annotations

import errno
import gzip
import os
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark
from medvidbench.core.config import Settings
from medvidbench.core.errors import NoQueueError, NotFoundError, TryLaterError, UsageError
from medvidbench.server.store.board_cache import BoardCache
from medvidbench.server.store.db import (
    check_migrated,
    database_url,
    make_engine,
    make_sessions,
    upgrade,
)
from medvidbench.server.upload_check import UploadChecker

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
DISK_FULL = {errno.ENOSPC, errno.EDQUOT}
DISK_FULL_RETRY = 600


@contextmanager
def storing(path: Path) -> Iterator[None]:
    """Writing an upload's file: on any failure it is removed (never left half-written), and a
    full disk or quota becomes a 507 the uploader can act on instead of a bare 500."""
    try:
        yield
    except BaseException as exc:
        path.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in DISK_FULL:
            raise TryLaterError(
                "the server's disk is full, so your file could not be stored; nothing was "
                "stored and no quota was used: try again later (the administrators need to "
                "free space)",
                DISK_FULL_RETRY,
                status=507,
            ) from None
        raise


def private_dir(path: Path) -> None:
    """Create ``path`` (and parents) if needed, and make it the owner's alone."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    if path.stat().st_mode & 0o777 != PRIVATE_DIR:
        path.chmod(PRIVATE_DIR)


def private_file(path: Path) -> None:
    """Create ``path`` empty if missing, and make it the owner's alone."""
    path.touch(mode=PRIVATE_FILE, exist_ok=True)
    if path.stat().st_mode & 0o777 != PRIVATE_FILE:
        path.chmod(PRIVATE_FILE)


def _write_gzip(path: Path, chunks: Iterable[bytes]) -> None:
    """Compress ``chunks`` into ``path``, a file only its owner can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as out:
        for chunk in chunks:
            out.write(chunk)


class Queue(Protocol):
    """Where services put background work: a submission to score or judge, a re-score.

    :class:`medvidbench.server.jobs.Jobs` is the real one (Huey); a runtime without one has
    :class:`NoQueue`, which refuses work instead of dropping it.
    """

    def enqueue_score(self, submission_id: int) -> None:
        """Score a stored submission (and judge it after, when a judge is configured)."""

    def enqueue_judge(self, submission_id: int) -> None:
        """Judge a scored submission's judged tasks."""

    def enqueue_rescore(self, submission_id: int, profile: str) -> None:
        """Add an evaluation of a submission under ``profile``."""

    def check(self) -> None:
        """Return when the queue answers now; raise (QueueUnavailableError) when not."""


class NoQueue:
    """The queue of a runtime that has none attached: every enqueue raises
    :class:`NoQueueError`, so work is never silently dropped."""

    def _refuse(self, job: str, submission_id: int) -> None:
        raise NoQueueError(
            f"cannot queue the {job} of submission {submission_id}: this process has no job "
            "queue (attach one with medvidbench.server.jobs.attach_queue)"
        )

    def enqueue_score(self, submission_id: int) -> None:
        self._refuse("scoring", submission_id)

    def enqueue_judge(self, submission_id: int) -> None:
        self._refuse("judging", submission_id)

    def enqueue_rescore(self, submission_id: int, profile: str) -> None:
        self._refuse(f"re-scoring under {profile!r}", submission_id)

    def check(self) -> None:
        raise NoQueueError("this process has no job queue")


class Runtime:
    """Everything a service function needs, built from settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.data_dir = settings.data_dir.resolve()
        private_dir(self.data_dir)
        self._gt_lock = threading.Lock()
        self._gt_cache: dict[str, Any] = {}
        self.queue: Queue = NoQueue()  # jobs.attach_queue sets the real one
        self.upload_checker = UploadChecker(
            settings.upload_process_bytes, settings.max_submission_bytes
        )
        self.boards = BoardCache()  # ranked board rows, per benchmark generation

    @cached_property
    def hosted(self) -> list[str]:
        """The slugs of the benchmarks this server hosts (``MEDVIDBENCH_BENCHMARKS``, else
        every installed plug-in), each checked to load."""
        wanted = [s.strip() for s in self.settings.benchmarks.split(",") if s.strip()]
        slugs = wanted or benchmarks.slugs()
        for slug in slugs:
            benchmarks.get(slug)  # an unknown or broken plug-in stops the server at start
        if not slugs:
            raise UsageError("no benchmark plug-in is installed")
        return slugs

    @property
    def default_slug(self) -> str:
        """The benchmark of the old single-benchmark URLs and of clients that name none."""
        preferred = benchmarks.default_slug()
        return preferred if preferred in self.hosted else self.hosted[0]

    def definition(self, slug: str | None = None) -> Benchmark:
        """A hosted benchmark's definition (None: the default one).

        Raises:
            NotFoundError: for a slug this server does not host.
        """
        slug = slug or self.default_slug
        if slug not in self.hosted:
            raise NotFoundError(
                f"no benchmark {slug!r} on this server; hosted: {', '.join(self.hosted)}"
            )
        return benchmarks.get(slug)

    @cached_property
    def engine(self) -> Engine:
        url = database_url(self.data_dir, self.settings.database_url)
        if self.settings.database_url is None:  # SQLite copies the file's mode to -wal, -shm
            private_file(self.data_dir / "medvidbench.sqlite3")
        return make_engine(url)

    @cached_property
    def sessions(self) -> sessionmaker[Session]:
        return make_sessions(self.engine)

    def upgrade_database(self) -> tuple[str | None, str]:
        """Apply every pending migration (what each server command does first); the revisions
        before (None: no schema) and after."""
        return upgrade(self.engine)

    def check_database(self) -> str:
        """The database's revision, when it is this code's.

        Raises:
            NotMigratedError: it is not ('medvidbench db upgrade' first).
        """
        return check_migrated(self.engine)

    # --- files ------------------------------------------------------------------------------

    def _path(self, folder: str, name: str) -> Path:
        directory = self.data_dir / folder
        private_dir(directory)
        return directory / name

    def submission_path(self, submission_id: int) -> Path:
        return self._path("submissions", f"{int(submission_id):08d}.json.gz")

    def benchmark_path(self, sha256: str) -> Path:
        if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
            raise ValueError("not a sha256 digest")
        return self._path("benchmarks", f"{sha256}.json.gz")

    def incoming_path(self) -> Path:
        """A new, empty private file under ``incoming/`` for an upload as it arrives."""
        path = self._path("incoming", f"{uuid.uuid4().hex}.upload")
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
        return path

    def stage(self, source: bytes | Path) -> Path:
        """Compress an upload (its bytes, or a file of them, read in chunks) into a new private
        file under ``incoming/``, to be renamed into place (:meth:`Path.replace`) once its
        database row exists."""
        path = self._path("incoming", f"{uuid.uuid4().hex}.json.gz")
        with storing(path):
            if isinstance(source, bytes):
                _write_gzip(path, [source])
            else:
                with open(source, "rb") as raw:
                    _write_gzip(path, iter(lambda: raw.read(1 << 20), b""))
        return path

    @staticmethod
    def write_atomically(path: Path, data: bytes) -> None:
        """Write compressed bytes so that a reader never sees a half-written file."""
        tmp = path.with_suffix(path.suffix + f".{os.getpid()}.{threading.get_ident()}.tmp")
        _write_gzip(tmp, [data])
        os.replace(tmp, path)

    @staticmethod
    def read(path: Path) -> bytes:
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            raise NotFoundError(f"stored file {path.name} is missing") from None

    def ground_truth(self, sha256: str, slug: str | None = None) -> Any:
        """A stored test set, loaded once per process."""
        with self._gt_lock:
            if sha256 not in self._gt_cache:
                self._gt_cache[sha256] = self.definition(slug).load_ground_truth(
                    self.read(self.benchmark_path(sha256))
                )
            return self._gt_cache[sha256]
