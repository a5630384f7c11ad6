"""The running server's shared resources: settings, database, stored files, test sets.

One :class:`Runtime` per process (web server or worker), created explicitly; nothing here
happens at import time. Stored files are named by database ids and hashes, never by user input.
"""

from __future__ import annotations

import gzip
import os
import threading
from functools import cached_property
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from medvidbench.config import Settings
from medvidbench.errors import NotFoundError
from medvidbench.groundtruth import GroundTruth, load_ground_truth
from medvidbench.store.db import database_url, make_engine, make_sessions


class Runtime:
    """Everything a service function needs, built from settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.data_dir = settings.data_dir.resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._gt_lock = threading.Lock()
        self._gt_cache: dict[str, GroundTruth] = {}
        self.queue: object | None = None  # set by jobs.attach_queue

    @cached_property
    def engine(self) -> Engine:
        return make_engine(database_url(self.data_dir, self.settings.database_url))

    @cached_property
    def sessions(self) -> sessionmaker[Session]:
        return make_sessions(self.engine)

    # --- files ------------------------------------------------------------------------------

    def _path(self, folder: str, name: str) -> Path:
        directory = self.data_dir / folder
        directory.mkdir(parents=True, exist_ok=True)
        return directory / name

    def submission_path(self, submission_id: int) -> Path:
        return self._path("submissions", f"{int(submission_id):08d}.json.gz")

    def benchmark_path(self, sha256: str) -> Path:
        if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
            raise ValueError("not a sha256 digest")
        return self._path("benchmarks", f"{sha256}.json.gz")

    @staticmethod
    def write_atomically(path: Path, data: bytes) -> None:
        """Write compressed bytes so that a reader never sees a half-written file."""
        tmp = path.with_suffix(path.suffix + f".{os.getpid()}.{threading.get_ident()}.tmp")
        with gzip.open(tmp, "wb", compresslevel=1) as fh:
            fh.write(data)
        os.replace(tmp, path)

    @staticmethod
    def read(path: Path) -> bytes:
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            raise NotFoundError(f"stored file {path.name} is missing") from None

    def ground_truth(self, sha256: str) -> GroundTruth:
        """A stored test set, loaded once per process."""
        with self._gt_lock:
            if sha256 not in self._gt_cache:
                self._gt_cache[sha256] = load_ground_truth(self.read(self.benchmark_path(sha256)))
            return self._gt_cache[sha256]
