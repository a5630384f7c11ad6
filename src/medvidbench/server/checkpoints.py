"""What one step of a submission's way leaves for the next, beside its stored upload.

- The *matched submission*, written when the upload is checked (in the web process, or in the
  child that checks large files): the score step reads it instead of decoding and matching the
  upload a second time.
- The *rule-based stage*, written by the score step when the submission has judged tasks: each
  rule-based task's result with its per-sample outcomes, the per-task summary and the
  bootstrap of the scored evaluation. The judge step judges the judged tasks only and merges
  them with it, instead of scoring everything again.

Both are MessagePack (msgspec, decoded into their declared types: nothing in them can run code),
gzip-compressed at a low level (they are written on the way of a submission), and kept where the
runtime keeps stored files (:mod:`medvidbench.server.store.files`: the data folder, or the
database, so that a worker on another machine finds them). A file that is missing, unreadable or
made for another test set, profile or scorer version is ignored and the work done again from the
upload, as it was before these files existed.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from medvidbench.core.evaluation import Scored
from medvidbench.core.scoring import TaskResult
from medvidbench.core.submission import MatchedSubmission
from medvidbench.server.store.files import FolderFiles, Kind, write_gzip

log = logging.getLogger(__name__)
_T = TypeVar("_T")


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
    """Where the folder store keeps the matched submission of the upload at ``upload``."""
    return upload.with_name(upload.name.split(".", 1)[0] + ".matched.msgpack.gz")


def scored_path(upload: Path) -> Path:
    """Where the folder store keeps the rule-based stage of the upload at ``upload``."""
    return upload.with_name(upload.name.split(".", 1)[0] + ".scored.msgpack.gz")


def write_matched(path: Path, matched: MatchedSubmission) -> None:
    """Keep a matched submission at ``path`` (a new private file under ``incoming/``, put in
    place by the store once its submission exists), encoded and compressed part by part."""
    write_gzip(path, matched_chunks(matched))


# Predictions encoded at a time when a matched submission is written (a part stays well under a
# megabyte for ordinary answers).
_PART = 4096


def matched_chunks(matched: MatchedSubmission) -> Iterator[bytes]:
    """``msgspec.msgpack.encode(matched)``, byte for byte, in parts: the report and the header
    of the predictions (the last field), then the predictions a few thousand at a time. A large
    upload's checker thus never holds the whole encoding beside the decoded predictions (it is
    about as large as the upload)."""
    encoder = msgspec.msgpack.Encoder()
    predictions = matched.predictions
    head = encoder.encode(MatchedSubmission(matched.report, []))
    if head[-1:] != b"\x90":  # the empty array, last: else the layout is not what this expects
        yield encoder.encode(matched)
        return
    yield head[:-1] + _array_header(len(predictions))
    for start in range(0, len(predictions), _PART):
        part = predictions[start : start + _PART]
        yield encoder.encode(part)[len(_array_header(len(part))) :]


def _array_header(length: int) -> bytes:
    """MessagePack's header of an array of ``length`` elements."""
    if length < 16:
        return bytes([0x90 | length])
    if length < 1 << 16:
        return b"\xdc" + length.to_bytes(2, "big")
    return b"\xdd" + length.to_bytes(4, "big")


def read_matched(files: FolderFiles, submission_id: int) -> MatchedSubmission | None:
    """The matched submission kept for a submission (None: none kept, or unreadable)."""
    return _read(files, "matched", submission_id, MatchedSubmission)


def write_scored(files: FolderFiles, submission_id: int, stage: ScoredStage) -> None:
    """Keep the rule-based stage of a submission (a reader never sees half of it)."""
    files.write("scored", submission_id, msgspec.msgpack.encode(stage))


def read_scored(
    files: FolderFiles, submission_id: int, test_set: str, profile: str, scorer_version: str
) -> ScoredStage | None:
    """The rule-based stage kept for a submission, if it was made for this test set, profile
    and scorer version."""
    stage = _read(files, "scored", submission_id, ScoredStage)
    if stage is None or (stage.test_set, stage.profile, stage.scorer_version) != (
        test_set,
        profile,
        scorer_version,
    ):
        return None
    return stage


def discard(files: FolderFiles, submission_id: int) -> None:
    """Remove what was kept for a submission (it is deleted)."""
    files.delete("matched", submission_id)
    files.delete("scored", submission_id)


def _read(files: FolderFiles, kind: Kind, submission_id: int, into: type[_T]) -> _T | None:
    try:
        data = files.read(kind, submission_id)
        return None if data is None else msgspec.msgpack.decode(data, type=into)
    except (OSError, EOFError, zlib.error, msgspec.DecodeError) as exc:  # damaged: do it again
        log.warning("ignoring the %s file of submission %s: %s", kind, submission_id, exc)
        return None
