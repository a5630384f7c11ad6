"""A submission's files read into entries: decoding, field checks, one entry per record.

A submission is one file, several files, or a folder of them (the per-GPU files of one
MedGRPO-Code run). Each record becomes an :class:`Entry` with what matching needs (its id,
qa_type, answer text, optional ``index`` and ``question``) or, when it cannot, problems with
their locations in the report. Matching itself is in :mod:`.matching`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth
from medvidbench.benchmarks.medvidbench.records import (
    IGNORED_UPLOAD_FIELDS,
    SubmissionRecord,
    sample_id,
    strip_video_tag,
)
from medvidbench.benchmarks.medvidbench.tasks.registry import TASKS, task_for_qa_type
from medvidbench.core.errors import Problem, ProblemList, UsageError
from medvidbench.core.formats import check_fields, decode, read_bytes, record_label
from medvidbench.core.submission import MAX_ANSWER_CHARS, ValidationReport, answer_too_long

_SHARD_NAME = re.compile(r"_gpu\d+\.jsonl?$")

Source = str | Path | bytes


class Entry(msgspec.Struct, gc=False):
    """A submission record reduced to what matching needs; ``at`` is its place in the file."""

    pos: int
    at: str
    sid: str
    qa_type: str
    text: str
    index: int | None
    question: str | None

    @property
    def where(self) -> str:
        """The record's place and id, as messages name it."""
        return _label(self.at, self.sid)


def read_entries(
    source: Source | Sequence[Source], gt: GroundTruth, max_bytes: int, name: str
) -> tuple[ValidationReport, list[list[Entry]] | None]:
    """The report begun, and each file's entries (None when nothing can be matched)."""
    parts = _parts(source, max_bytes, name)
    name = name or ("" if isinstance(source, bytes) else _name(source))
    # one file: its digest comes with decoding; several: the digest of them one after another
    digest = hashlib.sha256(b"".join(d for _, d in parts)).hexdigest() if len(parts) > 1 else ""
    report = ValidationReport(name, digest, sum(len(d) for _, d in parts), layout="")
    files: list[list[Entry]] = []
    for label, data in parts:
        entries = _read(label, data, gt, report, several=len(parts) > 1)
        if entries is None:
            return report, None
        files.append(entries)
    return report, files


def _name(source: Source | Sequence[Source]) -> str:
    if isinstance(source, str | Path):
        return str(source)
    return ", ".join(str(s) for s in source if not isinstance(s, bytes))


def _parts(source: Source | Sequence[Source], max_bytes: int, name: str) -> list[tuple[str, bytes]]:
    """The submission's files as ``(name, bytes)``: one file, several, or a folder's."""
    if isinstance(source, bytes):
        return [(name, source)]
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_dir():
            return [(name or str(path), read_bytes(path, max_bytes))]
        found = sorted(
            (p for p in path.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file()),
            key=_natural,
        )
        if not found:
            raise UsageError(f"{str(path)!r} holds no .json or .jsonl file")
        # MedGRPO-Code's results folder holds the merged file beside the per-GPU ones
        shards = [p for p in found if _SHARD_NAME.search(p.name)]
        source = shards or found
    parts = [(str(s), read_bytes(s, max_bytes)) for s in source if not isinstance(s, bytes)]
    parts += [(f"file {i + 1}", s) for i, s in enumerate(source) if isinstance(s, bytes)]
    total = sum(len(data) for _, data in parts)
    if total > max_bytes:
        raise UsageError(f"the files are {total:,} bytes, larger than the limit of {max_bytes:,}")
    if not parts:
        raise UsageError("no prediction file given")
    return parts


def _natural(path: Path) -> list[Any]:
    """Sort key that puts ``results_gpu10.json`` after ``results_gpu9.json``."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


def _read(
    label: str, source: bytes, gt: GroundTruth, report: ValidationReport, several: bool
) -> list[Entry] | None:
    """One file's records as entries (problems go to ``report``); None when the submission
    cannot be matched at all."""
    hint = "jsonl" if label.endswith(".jsonl") else "auto"
    decoded = decode(
        source, SubmissionRecord, hint, what="submission", single_record_field="qa_type"
    )
    prefix = f"{label}: " if several else ""
    for p in decoded.problems.items:
        report.errors.add(Problem(p.code, prefix + p.message, p.record, p.sample_id))
    report.records += len(decoded.records)
    report.layout = report.layout or decoded.layout
    report.sha256 = report.sha256 or decoded.sha256
    report.notices += [
        notice
        for f in IGNORED_UPLOAD_FIELDS
        if f'"{f}"'.encode() in source
        and (notice := f"field {f!r} is ignored: scores always use the server's own ground truth")
        not in report.notices
    ]
    if decoded.problems and not decoded.records:
        return None
    if _looks_like_ground_truth(decoded.records[:20], source):
        # One clear message, not one problem per record.
        report.errors.add(
            Problem(
                "ground-truth-file",
                f"{prefix}this looks like a ground-truth file (its records carry the reference "
                "answers in 'conversations'); submit your model's predictions",
            )
        )
        return None
    limit = len(gt) + max(1000, len(gt) // 10)
    if report.records > limit:
        report.errors.add(
            Problem(
                "too-many-records",
                f"the submission has {report.records:,} records; the test set has "
                f"{len(gt):,} samples",
            )
        )
        return None
    return [
        e
        for i, rec in enumerate(decoded.records)
        if (e := _entry(i, rec, prefix + record_label(decoded, i), decoded.typed, report.errors))
    ]


def _looks_like_ground_truth(head: list[Any], source: bytes) -> bool:
    """Records that hold reference answers (``conversations``) and no prediction: someone
    uploaded the test set itself."""
    if not head or b'"conversations"' not in source[: 1 << 20]:
        return False

    def answerless(rec: Any) -> bool:
        if isinstance(rec, dict):
            return "conversations" in rec and not {"prediction", "answer", "response"} & rec.keys()
        return isinstance(rec, SubmissionRecord) and all(
            getattr(rec, f) is msgspec.UNSET for f in ("prediction", "answer", "response")
        )

    return all(answerless(rec) for rec in head)


def _entry(i: int, rec: Any, where: str, typed: bool, errors: ProblemList) -> Entry | None:
    if rec is None:  # a JSONL line that was not JSON; already reported
        return None
    if not typed:
        if not isinstance(rec, dict):
            errors.add(
                Problem("wrong-type", f"{where}: expected an object, got {type(rec).__name__}", i)
            )
            return None
        found = _check_generic(rec, where, i)
        for p in found:
            errors.add(p)
        if found:
            return None
        try:
            rec = msgspec.convert(rec, SubmissionRecord)
        except msgspec.ValidationError as exc:
            errors.add(Problem("wrong-type", f"{where}: {exc}", i))
            return None
    return _semantic(i, rec, where, errors)


def _check_generic(rec: dict[str, Any], where: str, i: int) -> list[Problem]:
    sid = rec.get("id") if isinstance(rec.get("id"), str) else None
    label = f"{where} (id {sid!r})" if sid else where
    optional: dict[str, tuple[type, ...]] = {
        "id": (str,),
        "index": (int,),
        "question": (str,),
        "metadata": (dict,),
        "prediction": (str,),
        "answer": (str,),
        "response": (str,),
    }
    # A record that names its test-set position (``index``) needs no other identity.
    indexed = "index" in rec
    qa_type: dict[str, tuple[type, ...]] = {"qa_type": (str,)}
    required, optional = ({}, optional | qa_type) if indexed else (qa_type, optional)
    found = check_fields(rec, label, required, optional, i, sid)
    if not any(k in rec for k in ("prediction", "answer", "response")):
        found.append(
            Problem(
                "missing-field",
                f"{label}: missing field 'prediction' (or 'answer' in the results.json format)",
                i,
                sid,
            )
        )
    meta = rec.get("metadata")
    if "id" not in rec and not isinstance(meta, dict) and not indexed:
        found.append(
            Problem(
                "missing-field",
                f"{label}: missing field 'id' (or 'metadata' in the results.json format)",
                i,
                sid,
            )
        )
    if "id" not in rec and isinstance(meta, dict):
        fields = ("video_id", "fps", "input_video_start_frame", "input_video_end_frame")
        found += check_fields(
            meta, f"{label}, metadata", {k: (str, int, float) for k in fields}, record=i, sid=sid
        )
    return found


def _semantic(i: int, rec: SubmissionRecord, where: str, errors: ProblemList) -> Entry | None:
    if isinstance(rec.id, str):
        sid = rec.id
    elif isinstance(rec.metadata, msgspec.Struct):
        m = rec.metadata
        sid = sample_id(m.video_id, m.input_video_start_frame, m.input_video_end_frame, m.fps)
    else:
        sid = ""
    start = len(errors)
    text = (
        rec.prediction
        if isinstance(rec.prediction, str)
        else rec.answer
        if isinstance(rec.answer, str)
        else rec.response
        if isinstance(rec.response, str)
        else None
    )
    if text is None:
        errors.add(
            Problem(
                "missing-field",
                f"{_label(where, sid)}: missing field 'prediction' "
                "(or 'answer' in the results.json format)",
                i,
                sid or None,
            )
        )
    elif len(text) > MAX_ANSWER_CHARS and (  # the label is made only for the message
        too_long := answer_too_long(text, _label(where, sid), i, sid or None)
    ):
        errors.add(too_long)
    index = rec.index if isinstance(rec.index, int) else None
    qa_type = rec.qa_type if isinstance(rec.qa_type, str) else ""
    if not sid and index is None:
        errors.add(
            Problem(
                "missing-field",
                f"{_label(where, sid)}: missing field 'id' "
                "(or 'metadata' in the results.json format)",
                i,
            )
        )
    if not qa_type and index is None:
        errors.add(
            Problem(
                "missing-field", f"{_label(where, sid)}: missing field 'qa_type'", i, sid or None
            )
        )
    elif qa_type and task_for_qa_type(qa_type) is None:
        errors.add(
            Problem(
                "unknown-qa-type",
                f"{_label(where, sid)}: unknown qa_type {qa_type!r}; "
                f"expected one of {', '.join(TASKS)} (with a "
                "variant suffix such as _gpt where the test set "
                "has one)",
                i,
                sid or None,
            )
        )
    if index is not None and index < 0:
        errors.add(
            Problem(
                "bad-index",
                f"{_label(where, sid)}: expected 'index' to be 0 or more, got {index}",
                i,
                sid or None,
            )
        )
    if len(errors) > start:
        return None
    question = strip_video_tag(rec.question) if isinstance(rec.question, str) else None
    assert isinstance(text, str)
    return Entry(i, where, sid, qa_type, text, index, question)


def _label(where: str, sid: str) -> str:
    """A record's place with its id, for messages (made only when one is written)."""
    return f"{where} (id {sid!r})" if sid else where
