"""What one step of a submission's way leaves for the next, beside its stored upload.

- The *matched submission*, written when the upload is checked (in the web process, or in the
  child that checks large files): the score step reads it instead of decoding and matching the
  upload a second time.
- The *rule-based stage*, written by the score step when the submission has judged tasks: each
  rule-based task's result with its per-sample outcomes, the per-task summary and the
  bootstrap of the scored evaluation. The judge step judges the judged tasks only and merges
  them with it, instead of scoring everything again.

Both are MessagePack (msgspec, decoded into their declared types: nothing in them can run code),
gzip-compressed at a low level (they are written on the way of a submission). A file that is
missing, unreadable or made for another test set, profile or scorer version is ignored and the
work done again from the upload, as it was before these files existed.
"""

from __future__ import annotations

import gzip
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from medvidbench.core.evaluation import Scored
from medvidbench.core.scoring import TaskResult
from medvidbench.core.submission import MatchedSubmission

log = logging.getLogger(__name__)
_T = TypeVar("_T")
_LEVEL = 1  # fast: a 6,245-record submission compresses in a few milliseconds


@dataclass(slots=True)
class ScoredStage:
    """The score step's rule-based stage, as the judge step reads it back."""

    test_set: str  # the test set's sha256
    profile: str
    scorer_version: str
    results: list[TaskResult]
    per_task: dict[str, dict[str, Any]]
    statistics: dict[str, Any] | None

    def scored(self) -> Scored:
        return Scored(self.results, self.per_task)


def matched_path(upload: Path) -> Path:
    """Where the matched submission of the upload stored at ``upload`` is kept."""
    return upload.with_name(upload.name.split(".", 1)[0] + ".matched.msgpack.gz")


def scored_path(upload: Path) -> Path:
    """Where the rule-based stage of the upload stored at ``upload`` is kept."""
    return upload.with_name(upload.name.split(".", 1)[0] + ".scored.msgpack.gz")


def write_matched(path: Path, matched: MatchedSubmission) -> None:
    """Keep a matched submission at ``path`` (a new private file, such as one under
    ``incoming/``, renamed into place once its submission exists)."""
    _write(path, msgspec.msgpack.encode(matched))


def read_matched(upload: Path) -> MatchedSubmission | None:
    """The matched submission kept for ``upload`` (None: none kept, or unreadable)."""
    return _read(matched_path(upload), MatchedSubmission)


def write_scored(upload: Path, stage: ScoredStage) -> None:
    """Keep the rule-based stage of the submission stored at ``upload``."""
    path = scored_path(upload)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    _write(tmp, msgspec.msgpack.encode(stage))
    os.replace(tmp, path)  # a reader never sees half a file


def read_scored(
    upload: Path, test_set: str, profile: str, scorer_version: str
) -> ScoredStage | None:
    """The rule-based stage kept for ``upload``, if it was made for this test set, profile and
    scorer version."""
    stage = _read(scored_path(upload), ScoredStage)
    if stage is None or (stage.test_set, stage.profile, stage.scorer_version) != (
        test_set,
        profile,
        scorer_version,
    ):
        return None
    return stage


def discard(upload: Path) -> None:
    """Remove what was kept beside ``upload`` (the submission is deleted)."""
    matched_path(upload).unlink(missing_ok=True)
    scored_path(upload).unlink(missing_ok=True)


def _write(path: Path, data: bytes) -> None:
    """Compress ``data`` into ``path``, a file only its owner can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with (
        os.fdopen(fd, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=_LEVEL) as out,
    ):
        out.write(data)


def _read(path: Path, kind: type[_T]) -> _T | None:
    try:
        with gzip.open(path, "rb") as fh:
            return msgspec.msgpack.decode(fh.read(), type=kind)
    except FileNotFoundError:
        return None
    except (OSError, EOFError, msgspec.DecodeError) as exc:  # damaged: do the work again
        log.warning("ignoring %s: %s", path.name, exc)
        return None
