"""The reference test set: loading, validation and the per-sample view the scorers read.

A ground-truth problem is the operator's mistake, and we never guess around it: an unknown
dataset name, an unknown qa_type or a record without an answer stops the load with every
problem listed.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import msgspec

from medvidbench.benchmarks.medvidbench.datasets import DATASETS, canonical_dataset
from medvidbench.benchmarks.medvidbench.records import GTRecord, sample_id, strip_video_tag
from medvidbench.benchmarks.medvidbench.tasks.registry import TASKS, task_for_qa_type
from medvidbench.core.errors import InvalidGroundTruthError, Problem, ProblemList
from medvidbench.core.formats import (
    DEFAULT_MAX_BYTES,
    check_fields,
    decode,
    gc_paused,
    read_bytes,
    record_label,
)

_META_FIELDS = ("video_id", "fps", "input_video_start_frame", "input_video_end_frame")


class Sample(msgspec.Struct, frozen=True, gc=False):
    """One test question with its reference answer, as the scorers see it.

    ``struc_info`` stays undecoded JSON bytes until a scorer asks for it, which keeps a
    531,850-sample set small in memory.
    """

    index: int
    sample_id: str
    qa_type: str
    task: str
    dataset: str
    fps: float
    question: str
    answer: str
    struc_info: bytes
    recording: str = ""  # the source recording the test set declares ("": the video id's)

    def structure(self) -> Any:
        """The decoded ``struc_info`` (task-specific shape; None when absent)."""
        return msgspec.json.decode(self.struc_info)


@dataclass
class GroundTruth:
    """A loaded, validated test set.

    Attributes:
        samples: Every sample in file order; ``samples[i].index == i``.
        sha256: Hex digest of the source file, the identity of this benchmark version.
        warnings: Non-fatal observations (for example indistinguishable duplicate samples).
    """

    samples: list[Sample]
    sha256: str
    warnings: ProblemList = field(default_factory=ProblemList)
    # False for the public questions file (:func:`load_questions`): every answer is "", so it
    # can check a prediction file but never score one.
    answers: bool = True

    def __len__(self) -> int:
        return len(self.samples)

    @cached_property
    def groups(self) -> dict[tuple[str, str], list[int]]:
        """Sample indices per ``(id, qa_type)``, in file order (several questions per clip)."""
        out: dict[tuple[str, str], list[int]] = {}
        for s in self.samples:
            out.setdefault((s.sample_id, s.qa_type), []).append(s.index)
        return out

    @cached_property
    def qa_types(self) -> list[str]:
        """Each sample's qa_type, in file order."""
        return [s.qa_type for s in self.samples]

    @cached_property
    def qa_type_set(self) -> set[str | None]:
        """The qa_types the test set asks."""
        return set(self.qa_types)

    @cached_property
    def variants_by_task(self) -> dict[tuple[str, str], list[str]]:
        """The qa_type variants present per ``(id, task)``, for bare task names in uploads."""
        out: dict[tuple[str, str], list[str]] = {}
        for s in self.samples:
            seen = out.setdefault((s.sample_id, s.task), [])
            if s.qa_type not in seen:
                seen.append(s.qa_type)
        return out

    @cached_property
    def qa_types_by_id(self) -> dict[str, list[str]]:
        """The qa_types asked about each clip id, for helpful "no such sample" messages."""
        out: dict[str, list[str]] = {}
        for sid, qa_type in self.groups:
            out.setdefault(sid, []).append(qa_type)
        return out

    def task_counts(self) -> dict[str, int]:
        """Number of samples per task, in the registry's task order."""
        counts = Counter(s.task for s in self.samples)
        return {t: counts[t] for t in TASKS if counts[t]}

    def dataset_counts(self) -> dict[str, int]:
        counts = Counter(s.dataset for s in self.samples)
        return {d: counts[d] for d in DATASETS if counts[d]}


def load_ground_truth(
    source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES
) -> GroundTruth:
    """Load and validate a ground-truth file (list, dict keyed "0", "1", ..., or JSONL).

    Raises:
        InvalidGroundTruthError: with every problem found, when the file is unusable.
    """
    return _load(source, max_bytes, answers=True)


def load_questions(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> GroundTruth:
    """Load the public questions file: the test file without its answers (records whose
    ``conversations`` hold the human turn only; a ``data_source`` is not required).

    The result checks a prediction file (coverage, ids, qa_types, order) before the answers
    are released; it cannot score one (``answers`` is False, every answer is ""). A full test
    file loads too, its answers dropped.

    Raises:
        InvalidGroundTruthError: with every problem found, when the file is unusable.
    """
    return _load(source, max_bytes, answers=False)


def _load(source: str | Path | bytes, max_bytes: int, answers: bool) -> GroundTruth:
    name = "" if isinstance(source, bytes) else str(source)
    data = source if isinstance(source, bytes) else read_bytes(source, max_bytes)
    hint = "jsonl" if name.endswith(".jsonl") else "auto"
    with gc_paused():
        decoded = decode(data, GTRecord, hint, what="ground truth", single_record_field="qa_type")
        del data  # each struc_info is copied out below, so the file's buffer can be freed
        problems = decoded.problems
        records: list[Any] = decoded.records
        if not decoded.typed:
            records = [
                _check_record(records[i], record_label(decoded, i), problems)
                for i in range(len(records))
            ]
        decoded.records = []
        if not problems and not records:
            problems.add(Problem("no-records", "the ground truth contains no records"))
        samples: list[Sample] = []
        for i in range(len(records)):
            rec, records[i] = records[i], None  # release each record as soon as it is converted
            if rec is not None:
                sample = _to_sample(i, rec, record_label(decoded, i), problems, answers)
                if sample is not None:
                    samples.append(sample)
        if problems:
            raise InvalidGroundTruthError(problems, name)
        gt = GroundTruth(samples, decoded.sha256, answers=answers)
        _warn_indistinguishable(gt)
    return gt


def _check_record(raw: object, where: str, problems: ProblemList) -> GTRecord | None:
    """Check one generic record field by field; return it typed when it is sound."""
    if not isinstance(raw, dict):
        problems.add(
            Problem("wrong-type", f"{where}: expected an object, got {type(raw).__name__}")
        )
        return None
    found = check_fields(
        raw,
        where,
        {"conversations": (list,), "metadata": (dict,), "qa_type": (str,)},
        optional={"data_source": (str, type(None)), "dataset_name": (str, type(None))},
    )
    meta = raw.get("metadata")
    if isinstance(meta, dict):
        found += check_fields(
            meta,
            f"{where}, metadata",
            {k: (str, int, float) for k in _META_FIELDS},
            optional={"recording": (str, int, type(None))},
        )
    for p in found:
        problems.add(p)
    if found:
        return None
    try:
        return msgspec.json.decode(msgspec.json.encode(raw), type=GTRecord)
    except msgspec.ValidationError as exc:
        problems.add(Problem("wrong-type", f"{where}: {exc}"))
        return None


def _to_sample(
    i: int, rec: GTRecord, where: str, problems: ProblemList, answers: bool = True
) -> Sample | None:
    meta = rec.metadata
    sid = sample_id(
        meta.video_id, meta.input_video_start_frame, meta.input_video_end_frame, meta.fps
    )
    where = f"{where} (id {sid!r})"
    start = len(problems)
    task = task_for_qa_type(rec.qa_type)
    if task is None:
        problems.add(
            Problem("unknown-qa-type", f"{where}: unknown qa_type {rec.qa_type!r}", i, sid)
        )
    source = rec.data_source if rec.data_source not in (None, "", "Unknown") else rec.dataset_name
    dataset = canonical_dataset(source) if source else None
    if dataset is None and not answers:
        dataset = ""  # the questions file need not name it: nothing is scored per dataset
    if dataset is None:
        got = repr(source) if source else "nothing"
        problems.add(
            Problem(
                "unknown-dataset",
                f"{where}: expected data_source to be one of {', '.join(DATASETS)}; got {got}",
                i,
                sid,
            )
        )
    try:
        fps = float(meta.fps)
    except ValueError:
        fps = -1.0
    if not fps > 0 or fps == float("inf"):
        problems.add(
            Problem(
                "bad-fps",
                f"{where}: expected metadata.fps to be a positive number, got {meta.fps!r}",
                i,
                sid,
            )
        )
    turns = {t.from_: t.value for t in reversed(rec.conversations)}
    if not answers and "human" in turns:
        turns["gpt"] = ""
    if "human" not in turns or "gpt" not in turns:
        problems.add(
            Problem(
                "missing-turn",
                f"{where}: expected a 'human' and a 'gpt' turn in conversations"
                if answers
                else f"{where}: expected a 'human' turn (the question) in conversations",
                i,
                sid,
            )
        )
    if len(problems) > start:
        return None
    assert task is not None and dataset is not None
    return Sample(
        i,
        sid,
        sys.intern(rec.qa_type),  # a handful of distinct values over 500k samples
        task,
        dataset,
        fps,
        strip_video_tag(turns["human"]),
        turns["gpt"],
        bytes(rec.struc_info) if answers else b"null",
        sys.intern(str(meta.recording)) if meta.recording not in (None, "") else "",
    )


def _warn_indistinguishable(gt: GroundTruth) -> None:
    """Flag samples that share id, qa_type and question: only their order tells them apart."""
    for (sid, qa_type), members in gt.groups.items():
        if len(members) < 2:
            continue
        questions = Counter(gt.samples[i].question for i in members)
        repeated = sum(n for n in questions.values() if n > 1)
        if repeated:
            gt.warnings.add(
                Problem(
                    "indistinguishable-samples",
                    f"{repeated} samples with id {sid!r} and qa_type {qa_type!r} share the same "
                    "question; only order (or an 'index' field in each prediction) tells their "
                    "answers apart",
                    members[0],
                    sid,
                )
            )
