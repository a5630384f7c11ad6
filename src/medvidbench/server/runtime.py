"""The running server's shared resources: settings, database, stored files, test sets.

One :class:`Runtime` per process (web server or worker), created explicitly; nothing here
happens at import time. Stored files are named by database ids and hashes, never by user input,
and kept in the data folder or in the database (:mod:`medvidbench.server.store.files`,
``MEDVIDBENCH_FILE_STORE``). The data folder holds the embedded database, uploads as they
arrive and (with the folder store) the hidden test set and every upload, so it and everything
in it is the owner's alone: folders 0700, files 0600, whatever the process umask.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import threading
import uuid
from collections.abc import Iterator
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
from medvidbench.server.store.board_cache import BoardCache, RecentVersions
from medvidbench.server.store.db import (
    check_migrated,
    database_url,
    make_engine,
    make_sessions,
    upgrade,
)
from medvidbench.server.store.files import (
    PRIVATE_DIR,
    PRIVATE_FILE,
    DatabaseFiles,
    FolderFiles,
    private_dir,
    write_gzip,
)
from medvidbench.server.upload_check import UploadChecker

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "Queue", "Runtime", "private_dir", "storing"]
DISK_FULL = {errno.ENOSPC, errno.EDQUOT}
DISK_FULL_RETRY = 600
_SECRET_PREFIX = b"medvidbench: a hidden test set's own secret\0"


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


def private_file(path: Path) -> None:
    """Create ``path`` empty if missing, and make it the owner's alone."""
    path.touch(mode=PRIVATE_FILE, exist_ok=True)
    if path.stat().st_mode & 0o777 != PRIVATE_FILE:
        path.chmod(PRIVATE_FILE)


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

    def depth(self) -> dict[str, int] | None:
        """Jobs waiting, by state (``pending``, ``scheduled``); None when it cannot tell."""


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

    def depth(self) -> None:
        return None  # no queue: nothing waits in one


class Runtime:
    """Everything a service function needs, built from settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.data_dir = settings.data_dir.resolve()
        private_dir(self.data_dir)
        self._gt_lock = threading.Lock()
        self._gt_cache: dict[str, Any] = {}
        self._gt_secrets: dict[str, bytes] = {}  # per test set: what its bootstrap seed is from
        self.queue: Queue = NoQueue()  # jobs.attach_queue sets the real one
        self.upload_checker = UploadChecker(
            settings.upload_process_bytes, settings.max_submission_bytes
        )
        self.boards = BoardCache()  # ranked board rows, per benchmark generation
        # each benchmark's board version, for the page every visitor sees
        self.board_versions = RecentVersions(settings.board_recheck_seconds)

    @cached_property
    def hosted(self) -> list[str]:
        """The slugs of the benchmarks this server hosts, each checked to load, in the order
        pages and the start banner list them: ``MEDVIDBENCH_BENCHMARKS``'s order, else the
        default benchmark, then the published ones (with links to a paper or data), then the
        rest (demo sets), each in the registry's order."""
        wanted = [s.strip() for s in self.settings.benchmarks.split(",") if s.strip()]
        slugs = wanted or benchmarks.slugs()
        loaded = {slug: benchmarks.get(slug) for slug in slugs}  # a broken plug-in stops here
        if not slugs:
            raise UsageError("no benchmark plug-in is installed")
        if wanted:
            return slugs
        default = benchmarks.default_slug()
        return sorted(slugs, key=lambda s: (s != default, not loaded[s].presentation.links))

    @cached_property
    def secret_key(self) -> str:
        """``MEDVIDBENCH_SECRET_KEY``, or a key generated once into the data folder (owner-only):
        the first process to need it writes it whole under another name and links it into
        place, so a process starting at the same moment reads that key, never half of one."""
        if self.settings.secret_key is not None:
            return self.settings.secret_key.get_secret_value()
        path = self.data_dir / "secret_key"
        if not path.exists():
            made = path.with_name(f".secret_key.{uuid.uuid4().hex}.tmp")
            fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(48))
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(made, path)
            except FileExistsError:
                pass  # another process was first: its key is the one
            finally:
                os.unlink(made)
        key = path.read_text().strip()
        if not key:  # left by a crash of an earlier release between creating and writing it
            raise UsageError(
                f"{path} is empty: delete it (with every process stopped; signed-in visitors "
                "sign in again) and a new key is made"
            )
        return key

    def bootstrap_seed(self, definition: Benchmark, gt_sha256: str) -> int:
        """The seed of the bootstrap of evaluations on the stored test set ``gt_sha256``.

        A benchmark whose labels are public uses ``MEDVIDBENCH_BOOTSTRAP_SEED`` itself, so
        anyone can draw its intervals again offline. Any other uses a 63-bit number derived
        from that seed and the test set's contents, never shown: with the seed known, the
        intervals of two submissions that differ on a few items tell which of those items each
        got right (their difference alone tells only how many). Every process that scores
        holds the test set, so all draw alike with nothing more to share, and only someone
        who holds the labels could find the seed.
        """
        seed = self.settings.bootstrap_seed
        if definition.labels == "public":
            return seed
        self.ground_truth(gt_sha256, definition.slug)  # reads the file, and its secret with it
        message = self._gt_secrets[gt_sha256] + f"bootstrap seed {seed}".encode()
        return int.from_bytes(hashlib.sha256(message).digest()[:8], "big") >> 1

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
        return make_engine(url, self.settings.database_connect_timeout)

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

    @cached_property
    def files(self) -> FolderFiles:
        """Where uploads, the files kept between steps and test sets are stored: the data
        folder, or the database (``MEDVIDBENCH_FILE_STORE``; auto: the database when it is a
        server database, not the embedded SQLite file)."""
        store = self.settings.file_store
        if store == "auto":
            url = database_url(self.data_dir, self.settings.database_url)
            store = "folder" if url.startswith("sqlite") else "database"
        if store == "database":
            return DatabaseFiles(self.data_dir, self.sessions)
        return FolderFiles(self.data_dir)

    def _path(self, folder: str, name: str) -> Path:
        directory = self.data_dir / folder
        private_dir(directory)
        return directory / name

    def submission_path(self, submission_id: int) -> Path:
        """Where the folder store keeps a submission's upload."""
        return self.files.path("submission", submission_id)

    def benchmark_path(self, sha256: str) -> Path:
        """Where the folder store keeps a test set."""
        return self.files.path("test-set", sha256)

    def incoming_path(self) -> Path:
        """A new, empty private file under ``incoming/`` for an upload as it arrives."""
        path = self._path("incoming", f"{uuid.uuid4().hex}.upload")
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
        return path

    def stage(self, source: bytes | Path) -> Path:
        """Compress an upload (its bytes, or a file of them, read in chunks) into a new private
        file under ``incoming/`` (this machine's disk), to be put in place by the store
        (``files.place``) inside the transaction that creates its row."""
        path = self._path("incoming", f"{uuid.uuid4().hex}.json.gz")
        with storing(path):
            if isinstance(source, bytes):
                write_gzip(path, [source])
            else:
                with open(source, "rb") as raw:
                    write_gzip(path, iter(lambda: raw.read(1 << 20), b""))
        return path

    def read_upload(self, submission_id: int) -> bytes:
        """A stored submission's file, decompressed."""
        data = self.files.read("submission", submission_id)
        if data is None:
            raise NotFoundError(f"the stored file of submission {submission_id} is missing")
        return data

    def test_set_file(self, sha256: str) -> Path:
        """A compressed copy of a stored test set on this machine's disk (for the child process
        that checks large uploads)."""
        path = self.files.local("test-set", sha256)
        if path is None:
            raise NotFoundError(f"stored test set {sha256[:12]} is missing")
        return path

    def ground_truth(self, sha256: str, slug: str | None = None) -> Any:
        """A stored test set, loaded once per process."""
        with self._gt_lock:
            if sha256 not in self._gt_cache:
                data = self.files.read("test-set", sha256)
                if data is None:
                    raise NotFoundError(f"stored test set {sha256[:12]} is missing")
                self._gt_cache[sha256] = self.definition(slug).load_ground_truth(data)
                # the contents hashed behind a fixed prefix: no function of the file's public
                # sha256 (what a keyed hash of the file itself would start from)
                self._gt_secrets[sha256] = hashlib.sha256(_SECRET_PREFIX + data).digest()
            return self._gt_cache[sha256]
