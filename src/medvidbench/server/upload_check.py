"""Validating an upload without stalling the server: large files are checked in a child process.

Decoding and matching a large prediction file is CPU-bound Python. In a thread of the web
process it still holds the interpreter lock for long stretches, and every other request waits
behind it (measured: a 168 MB upload held the health check's p95 near 300 ms). A child process
has its own interpreter, so the web process only waits for the answer. Small files, the usual
case, are checked in the calling thread, where a process round trip would cost more than it
saves. A zip archive goes to the child whatever its size: what it unpacks to is known only once
it is read (a 1 MB upload unpacking to 1,000 MiB took the web process to 2.9 GB). The child keeps
each test set it has loaded, keyed by its file hash.

A valid upload's matched submission is kept where the caller asks (``keep``), so that the score
step reads it instead of checking the file again (:mod:`medvidbench.server.checkpoints`); the
child writes it there itself, so only the report crosses the pipe.

The child can die (the OOM killer, an operator's kill): the pool is then broken for good, so
it is replaced and the check tried once more; a second death answers 503 for that upload only.
"""

from __future__ import annotations

import logging
import threading
import zipfile
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark
from medvidbench.core.errors import TryLaterError
from medvidbench.core.submission import MatchedSubmission, ValidationReport
from medvidbench.server.checkpoints import write_matched

log = logging.getLogger(__name__)
RETRY_SECONDS = 30
_CHILD_TEST_SETS: dict[tuple[str, str, str], Any] = {}


def _check_in_child(
    slug: str, gt_path: str, sha256: str, data: str, name: str, max_bytes: int, keep: str | None
) -> ValidationReport:
    """Runs in the child: the report of the file ``data`` against the stored test set (the
    matched submission written to ``keep`` when valid)."""
    import gzip

    bench = benchmarks.get(slug)
    key = (slug, gt_path, sha256)
    if key not in _CHILD_TEST_SETS:
        with gzip.open(gt_path, "rb") as fh:
            _CHILD_TEST_SETS.clear()  # one test set at a time: memory stays bounded
            _CHILD_TEST_SETS[key] = bench.load_ground_truth(fh.read())
    matched = bench.validate_submission(
        Path(data), _CHILD_TEST_SETS[key], max_bytes=max_bytes, name=name
    )
    return _kept(matched, keep)


def _kept(matched: MatchedSubmission, keep: str | Path | None) -> ValidationReport:
    """The report, the matched submission written to ``keep`` first when valid."""
    if keep is not None and matched.report.ok:
        write_matched(Path(keep), matched)
    return matched.report


class UploadChecker:
    """Validates uploads; those of ``threshold`` bytes or more, and every zip archive, in one
    child process. No file is read, nor any archive unpacked, past ``max_bytes`` (the
    configured upload limit)."""

    def __init__(self, threshold: int, max_bytes: int) -> None:
        self.threshold = threshold
        self.max_bytes = max_bytes
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # spawn: a fresh interpreter, nothing inherited from a threaded server process
                self._pool = ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn"))
            return self._pool

    def check(
        self,
        bench: Benchmark,
        data: bytes | Path,
        gt: Any,
        gt_path: Path,
        sha256: str,
        name: str,
        keep: Path | None = None,
    ) -> ValidationReport:
        """The validation report of an upload (its bytes, or the file holding them) against
        the test set ``gt`` (stored at ``gt_path``): the same report wherever it is computed.
        When the upload is valid, its matched submission is written to ``keep`` (if given).

        Only a file is sent to the child (by its path: the bytes never cross the pipe)."""
        if isinstance(data, bytes) or (
            data.stat().st_size < self.threshold and not zipfile.is_zipfile(data)
        ):
            source = data if isinstance(data, bytes) else data.read_bytes()
            matched = bench.validate_submission(source, gt, max_bytes=self.max_bytes, name=name)
            return _kept(matched, keep)
        where = None if keep is None else str(keep)
        args = (bench.slug, str(gt_path), sha256, str(data), name, self.max_bytes, where)
        for _ in range(2):
            pool = self._executor()
            try:
                return pool.submit(_check_in_child, *args).result()
            except BrokenProcessPool:
                log.warning("the upload-checking child process died; starting a new one")
                self._discard(pool)
        raise TryLaterError(
            "the process that checks large uploads stopped twice while checking this file "
            f"(the server may be short of memory); nothing was stored, try again in "
            f"{RETRY_SECONDS} seconds",
            RETRY_SECONDS,
        )

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        """Forget a broken pool (unless another thread already replaced it)."""
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
