"""Submission validation and matching predictions to test samples by identity.

Upstream pairs the i-th prediction with the i-th test sample and only warns when the qa_types
disagree, so a reordered file is silently scored against the wrong answers (metrics.md §7 B2).
We match by ``(id, qa_type, k)``, where k counts earlier records with the same id and qa_type in
each file; an explicit ``index`` field wins; a ``question`` field (results.json format)
disambiguates several questions about the same clip. A shuffled file therefore scores exactly
like an ordered one.

Every problem is collected, with its location, before anything is decided.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from medvidbench.benchmarks.medvidbench import answer_formats, layouts
from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth
from medvidbench.benchmarks.medvidbench.records import (
    IGNORED_UPLOAD_FIELDS,
    SubmissionRecord,
    sample_id,
    strip_video_tag,
)
from medvidbench.benchmarks.medvidbench.tasks.registry import TASKS, task_for_qa_type
from medvidbench.core.errors import InvalidSubmissionError, Problem, ProblemList, UsageError
from medvidbench.core.formats import (
    DEFAULT_MAX_BYTES,
    check_fields,
    decode,
    read_bytes,
    record_label,
)
from medvidbench.core.submission import (
    ORDER_ONLY,
    MatchedSubmission,
    TaskCoverage,
    ValidationReport,
    answer_too_long,
)

_SUB_FILE = list[SubmissionRecord] | dict[str, SubmissionRecord]
_SHARD_NAME = re.compile(r"_gpu\d+\.jsonl?$")
_EXAMPLES = 5


class _Entry(msgspec.Struct, gc=False):
    """A submission record reduced to what matching needs."""

    pos: int
    where: str
    sid: str
    qa_type: str
    text: str
    index: int | None
    question: str | None


Source = str | Path | bytes


def validate_submission(
    source: Source | Sequence[Source],
    gt: GroundTruth,
    max_bytes: int = DEFAULT_MAX_BYTES,
    name: str = "",
) -> MatchedSubmission:
    """Validate a prediction file against a test set and match it sample by sample.

    ``source`` may also be several files, or a folder of them, that together make one
    submission: the per-GPU files of one MedGRPO-Code run, say (:mod:`.layouts`).

    Never raises on the file's content: every problem is in ``result.report.errors``.
    """
    parts = _parts(source, max_bytes, name)
    name = name or ("" if isinstance(source, bytes) else _name(source))
    # one file: its digest comes with decoding; several: the digest of them one after another
    digest = hashlib.sha256(b"".join(d for _, d in parts)).hexdigest() if len(parts) > 1 else ""
    report = ValidationReport(name, digest, sum(len(d) for _, d in parts), layout="")
    predictions: list[str | None] = [None] * len(gt)
    files: list[list[_Entry]] = []
    for label, data in parts:
        entries = _read(label, data, gt, report, several=len(parts) > 1)
        if entries is None:
            return MatchedSubmission(report, predictions)
        files.append(entries)
    if not report.layout:
        report.layout = "list"
    _Matcher(gt, report, predictions).run(files)
    if not gt.answers:
        _check_formats(gt, report, predictions)
    return MatchedSubmission(report, predictions)


def _check_formats(gt: GroundTruth, report: ValidationReport, texts: list[str | None]) -> None:
    """Against the questions file: which answers their task's scorer reads nothing from."""
    labels = [f"sample {s.index} (id {s.sample_id!r})" for s in gt.samples]
    counts, examples = answer_formats.check([s.task for s in gt.samples], texts, labels)
    report.readable = counts
    for task, shown in examples.items():
        answered = report.coverage[task].matched
        bad = answered - counts[task]
        expected = answer_formats.FORMATS.get(task)
        report.warnings.add(
            Problem(
                "unreadable-answer",
                f"task {task!r}: {bad:,} of {answered:,} answers are in no format its scorer "
                f"reads (they score 0 under leaderboard-v1)"
                + (f"; expected {expected}" if expected else "")
                + f"; e.g. {'; '.join(shown)}",
            )
        )


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
) -> list[_Entry] | None:
    """One file's records as entries (problems go to ``report``); None when the submission
    cannot be matched at all."""
    hint = "jsonl" if label.endswith(".jsonl") else "auto"
    decoded = decode(source, _SUB_FILE, hint, what="submission", single_record_field="qa_type")
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


def load_submission(
    source: str | Path | bytes, gt: GroundTruth, max_bytes: int = DEFAULT_MAX_BYTES, name: str = ""
) -> MatchedSubmission:
    """Like :func:`validate_submission`, but raise when the file is invalid.

    Raises:
        InvalidSubmissionError: listing every problem found.
    """
    result = validate_submission(source, gt, max_bytes, name)
    if not result.report.ok:
        raise InvalidSubmissionError(result.report.errors, result.report.source)
    return result


def _entry(i: int, rec: Any, where: str, typed: bool, errors: ProblemList) -> _Entry | None:
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
    found = check_fields(rec, label, {"qa_type": (str,)}, optional, i, sid)
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
    if "id" not in rec and not isinstance(meta, dict):
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


def _semantic(i: int, rec: SubmissionRecord, where: str, errors: ProblemList) -> _Entry | None:
    if isinstance(rec.id, str):
        sid = rec.id
    elif isinstance(rec.metadata, msgspec.Struct):
        m = rec.metadata
        sid = sample_id(m.video_id, m.input_video_start_frame, m.input_video_end_frame, m.fps)
    else:
        sid = ""
    label = f"{where} (id {sid!r})" if sid else where
    start = len(errors)
    text = next((t for t in (rec.prediction, rec.answer, rec.response) if isinstance(t, str)), None)
    if text is None:
        errors.add(
            Problem(
                "missing-field",
                f"{label}: missing field 'prediction' (or 'answer' in the results.json format)",
                i,
                sid or None,
            )
        )
    elif (too_long := answer_too_long(text, label, i, sid or None)) is not None:
        errors.add(too_long)
    if not sid:
        errors.add(
            Problem(
                "missing-field",
                f"{label}: missing field 'id' (or 'metadata' in the results.json format)",
                i,
            )
        )
    if task_for_qa_type(rec.qa_type) is None:
        errors.add(
            Problem(
                "unknown-qa-type",
                f"{label}: unknown qa_type {rec.qa_type!r}; "
                f"expected one of {', '.join(TASKS)} (with a "
                "variant suffix such as _gpt where the test set "
                "has one)",
                i,
                sid or None,
            )
        )
    index = rec.index if isinstance(rec.index, int) else None
    if index is not None and index < 0:
        errors.add(
            Problem(
                "bad-index",
                f"{label}: expected 'index' to be 0 or more, got {index}",
                i,
                sid or None,
            )
        )
    if len(errors) > start:
        return None
    question = strip_video_tag(rec.question) if isinstance(rec.question, str) else None
    assert isinstance(text, str)
    return _Entry(i, label, sid, rec.qa_type, text, index, question)


class _Matcher:
    """Assigns entries to test samples and records coverage in the report."""

    def __init__(self, gt: GroundTruth, report: ValidationReport, out: list[str | None]) -> None:
        self.gt, self.report, self.out = gt, report, out
        self.taken: dict[int, int] = {}  # sample index -> record number that claimed it
        self.order_only: dict[str, int] = {}  # task -> predictions matched by order alone
        self.order_only_types: dict[str, list[str]] = {}

    def run(self, files: list[list[_Entry]]) -> None:
        entries = [e for f in files for e in f]
        if not self.report.errors and all(e.index is None for e in entries):
            order = self._layout(files)
            if order is not None:
                for e, target in zip(entries, order, strict=True):
                    self._claim(e, target)
                self._coverage()
                return
        # Explicit indices first, so that order-based matching never takes their samples.
        for e in entries:
            if e.index is not None:
                self._by_index(e)
        for e in entries:
            if e.index is None:
                self._by_identity(e)
        self._coverage()

    def _layout(self, files: list[list[_Entry]]) -> list[int] | None:
        """The test questions the records answer, one for one, when the files are in the test
        file's order or a known pipeline's (:mod:`.layouts`); else None."""
        gt, samples = self.gt, self.gt.samples
        types: set[str | None] = {e.qa_type for f in files for e in f}
        if not types <= gt.qa_type_set:  # bare task names: resolve record by record
            types = {self._resolve(e.sid, e.qa_type) for f in files for e in f}
            if None in types:
                return None
        if types == gt.qa_type_set:
            indices: Sequence[int] = range(len(samples))
            qa_types: Sequence[str] = gt.qa_types
        else:
            indices = [s.index for s in samples if s.qa_type in types]
            qa_types = [samples[i].qa_type for i in indices]
        same = self._same

        def fits(entries: list[_Entry], order: Iterable[int]) -> bool:
            return all(same(e, samples[i]) for e, i in zip(entries, order, strict=False))

        if len(files) == 1:
            found = layouts.find_merged(
                len(files[0]), lambda order: fits(files[0], order), indices, qa_types
            )
            if found is None:
                return None
            n, order = found
            if n > 1:
                self._say(layouts.describe(n))
            return order
        sizes = [len(f) for f in files]
        gpus = layouts.find_shards(
            sizes,
            lambda f, order: len(order) == sizes[f] and fits(files[f], order),
            indices,
            qa_types,
        )
        if gpus is None:
            return None
        self._say(f"{layouts.describe(len(files))} from its {len(files)} per-GPU files")
        shares = {g: layouts.gpu_share(indices, qa_types, len(files), g) for g in gpus}
        return [i for g in gpus for i in shares[g]]

    def _same(self, e: _Entry, s: Any) -> bool:
        """Whether record ``e`` can be the answer to test question ``s``."""
        return (
            e.sid == s.sample_id
            and (e.qa_type == s.qa_type or self._resolve(e.sid, e.qa_type) == s.qa_type)
            and (e.question is None or e.question == s.question)
        )

    def _say(self, line: str) -> None:
        self.report.restored = line
        self.report.notices.append(line)

    def _claim(self, e: _Entry, target: int) -> None:
        if target in self.taken:
            s = self.gt.samples[target]
            self.report.errors.add(
                Problem(
                    "duplicate",
                    f"{e.where}: a second prediction for sample {target} "
                    f"({s.sample_id!r}, {s.qa_type}), already given by record "
                    f"{self.taken[target]}",
                    e.pos,
                    e.sid,
                )
            )
            return
        self.taken[target] = e.pos
        self.out[target] = e.text

    def _by_index(self, e: _Entry) -> None:
        assert e.index is not None
        if e.index >= len(self.gt):
            self.report.errors.add(
                Problem(
                    "bad-index",
                    f"{e.where}: index {e.index} is past the last sample ({len(self.gt) - 1})",
                    e.pos,
                    e.sid,
                )
            )
            return
        s = self.gt.samples[e.index]
        if s.sample_id != e.sid or self._resolve(e.sid, e.qa_type) != s.qa_type:
            self.report.errors.add(
                Problem(
                    "index-mismatch",
                    f"{e.where}: index {e.index} is sample {s.sample_id!r} "
                    f"({s.qa_type}), but the record says {e.sid!r} ({e.qa_type})",
                    e.pos,
                    e.sid,
                )
            )
            return
        self._claim(e, e.index)

    def _resolve(self, sid: str, qa_type: str) -> str | None:
        """The test set's qa_type for an upload's, accepting bare task names."""
        if (sid, qa_type) in self.gt.groups:
            return qa_type
        variants = self.gt.variants_by_task.get((sid, qa_type), []) if qa_type in TASKS else []
        return variants[0] if len(variants) == 1 else None

    def _by_identity(self, e: _Entry) -> None:
        qa_type = self._resolve(e.sid, e.qa_type)
        members = self.gt.groups.get((e.sid, qa_type)) if qa_type else None
        if not members:
            self.report.errors.add(Problem("unmatched", self._unmatched_message(e), e.pos, e.sid))
            return
        free = [m for m in members if m not in self.taken]
        if not free:
            if len(members) == 1:
                self._claim(e, members[0])  # reports the duplicate
            else:
                self.report.errors.add(
                    Problem(
                        "duplicate",
                        f"{e.where}: more predictions for qa_type {qa_type!r} than the "
                        f"test set has samples with this id ({len(members)})",
                        e.pos,
                        e.sid,
                    )
                )
            return
        target = free[0]
        alike = len(members)  # the questions this record cannot tell apart
        if e.question is not None and len(members) > 1:
            same = [m for m in members if self.gt.samples[m].question == e.question]
            alike = len(same) or len(members)
            target = next((m for m in same if m not in self.taken), target)
        if alike > 1:
            task = self.gt.samples[target].task
            self.order_only[task] = self.order_only.get(task, 0) + 1
            seen = self.order_only_types.setdefault(task, [])
            if self.gt.samples[target].qa_type not in seen:
                seen.append(self.gt.samples[target].qa_type)
        self._claim(e, target)

    def _unmatched_message(self, e: _Entry) -> str:
        variants = self.gt.variants_by_task.get((e.sid, e.qa_type), [])
        if e.qa_type in TASKS and len(variants) > 1:
            return (
                f"{e.where}: qa_type {e.qa_type!r} is ambiguous for this id; use one of "
                f"{', '.join(variants)}"
            )
        others = self.gt.qa_types_by_id.get(e.sid)
        if others:
            return (
                f"{e.where}: the test set has no {e.qa_type!r} question for this id "
                f"(it has {', '.join(others)})"
            )
        return f"{e.where}: id {e.sid!r} matches no sample of the test set"

    def _coverage(self) -> None:
        report, gt = self.report, self.gt
        report.matched = len(self.taken)
        counts = gt.task_counts()
        matched = dict.fromkeys(counts, 0)
        for target in self.taken:
            matched[gt.samples[target].task] += 1
        report.coverage = {t: TaskCoverage(t, counts[t], matched[t]) for t in counts}
        for t, cov in report.coverage.items():
            if cov.status == "incomplete":
                self._report_incomplete(t, cov)
        if not report.matched and report.records and not report.errors:
            report.errors.add(Problem("nothing-matched", "no record matches a test sample"))
        if report.records == 0 and not report.errors:
            report.errors.add(Problem("no-records", "the submission contains no records"))
        report.order_only = {t: self.order_only[t] for t in counts if t in self.order_only}
        for task, n in report.order_only.items():
            report.warnings.add(
                Problem(ORDER_ONLY, _order_only_message(task, n, self.order_only_types[task]))
            )

    def _report_incomplete(self, task: str, cov: TaskCoverage) -> None:
        missing = [s for s in self.gt.samples if s.task == task and s.index not in self.taken]
        examples = ", ".join(f"{s.index} ({s.sample_id!r})" for s in missing[:_EXAMPLES])
        self.report.errors.add(
            Problem(
                "incomplete-task",
                f"task {task!r}: {cov.matched:,} of {cov.expected:,} samples have a prediction; "
                f"{len(missing):,} missing, e.g. samples {examples}. Predict every sample of a "
                "task, or leave the task out entirely (a partial submission).",
            )
        )
        for s in missing:
            self.report.errors.add(
                Problem(
                    "missing-prediction",
                    f"task {task!r}: no prediction for sample {s.index} "
                    f"(id {s.sample_id!r}, qa_type {s.qa_type})",
                    None,
                    s.sample_id,
                )
            )


def _order_only_message(task: str, n: int, qa_types: list[str]) -> str:
    """The order-only warning of one task: how many, which task, what to add.

    Examples:
        >>> _order_only_message("cvs_assessment", 1, ["cvs_assessment"])[:77]
        "task 'cvs_assessment': 1 prediction was matched to its test question by order"
    """
    kinds = ", ".join(qa_types)
    return (
        f"task {task!r}: {n:,} prediction{'s were' if n != 1 else ' was'} matched to "
        f"{'their' if n != 1 else 'its'} test question by order alone (qa_type {kinds}): these "
        "clips have several questions of that qa_type, and nothing in the records (an 'index', "
        "or 'question' text that differs) says which answer is which. The file is in neither "
        "the test file's order nor a known pipeline's, so if it was reordered, these answers "
        "are scored against the wrong questions. Add an 'index' field to each record: its "
        "question's position in the test file, from 0."
    )
