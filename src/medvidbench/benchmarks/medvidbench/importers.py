"""Importers: the files other evaluation toolkits write, turned into MedVidBench submissions.

Each importer reads one toolkit's output and returns submission records keyed by ``index``, the
answered question's position in the test file, so that matching is exact whatever order the
toolkit wrote them in (lmms-eval gathers its ranks' samples one rank after another). Given the
test file's records (``questions``, the public questions file will do), an importer also fills
in ``id`` and ``qa_type`` and checks that each answer really belongs to the question at its
index, refusing the file, with every problem located, when it does not.

- :class:`LmmsEvalImporter`: the ``samples_<task>.jsonl`` that ``lmms-eval --log_samples``
  writes (``doc_id``, ``filtered_resps``, ``input``, ``target``, ``doc_hash``, the task's
  metrics; older releases also keep ``doc`` and ``arguments``).
- :class:`VlmEvalKitImporter`: VLMEvalKit's prediction file ``<model>_<dataset>.xlsx`` (its
  default), ``.tsv`` or ``.json``: the dataset's own columns (``index``, ``question``, ...)
  plus ``prediction``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from medvidbench.benchmarks.medvidbench.records import sample_id, strip_video_tag
from medvidbench.core.errors import InvalidSubmissionError, Problem, ProblemList

# What the task that ``medvidbench export-task lmms-eval`` writes returns from process_results;
# lmms-eval copies it into every logged sample, so an import of that task's samples is exact.
SUBMISSION_METRIC = "medvidbench_submission"


class Question(msgspec.Struct, frozen=True):
    """What an importer needs of one test-file record."""

    index: int
    sample_id: str
    qa_type: str
    asked: str  # as the test file asks it, without the ``<video>`` tag
    text: str  # the same, whitespace runs as one space (what comparisons use)


def question_view(records: Sequence[Mapping[str, Any]]) -> list[Question]:
    """The test file's records (ground truth or public questions) as :class:`Question` s.

    Examples:
        >>> rec = {"qa_type": "tal", "metadata": {"video_id": "v", "fps": "1.0",
        ...        "input_video_start_frame": "0", "input_video_end_frame": "9"},
        ...        "conversations": [{"from": "human", "value": "<video>\\nWhen?"}]}
        >>> question_view([rec])[0]
        Question(index=0, sample_id='v&&0&&9&&1.0', qa_type='tal', asked='When?', text='When?')
    """
    out = []
    for i, rec in enumerate(records):
        meta = rec.get("metadata")
        sid = rec.get("id")
        if not isinstance(sid, str) and isinstance(meta, Mapping):
            keys = ("video_id", "input_video_start_frame", "input_video_end_frame", "fps")
            sid = sample_id(*(meta.get(k) for k in keys))
        text = rec.get("question")
        if not isinstance(text, str):
            turns = rec.get("conversations") or []
            human = [t.get("value") for t in turns if isinstance(t, Mapping)]
            text = next((t for t in human if isinstance(t, str)), "")
        asked = strip_video_tag(text)
        out.append(Question(i, str(sid or ""), str(rec.get("qa_type") or ""), asked, _plain(asked)))
    return out


def _plain(text: str) -> str:
    """A question compared loosely: no ``<video>`` tag, whitespace runs as one space."""
    return " ".join(strip_video_tag(text).split())


def _first_text(value: Any) -> str | None:
    """The first answer in lmms-eval's ``filtered_resps``/``resps``: a string, or a (nested)
    list whose first leaf is one (one list per request, one entry per repeat)."""
    while isinstance(value, list) and value:
        value = value[0]
    return value if isinstance(value, str) else None


class _Collector:
    """Answers by index, with every problem found on the way."""

    def __init__(self, filename: str, questions: Sequence[Mapping[str, Any]] | None) -> None:
        self.filename = filename
        self.questions = question_view(questions) if questions is not None else None
        self.problems: list[Problem] = []
        self.answers: dict[int, tuple[int, dict[str, Any]]] = {}  # index -> (record, output)
        self.mismatched = 0

    def add(self, record: int, where: str, index: int, prediction: str, **known: Any) -> None:
        """Keep ``prediction`` for test question ``index``; ``known`` holds what the source
        says about that question (``question``, ``id``, ``qa_type``), checked when possible."""
        if index < 0 or (self.questions is not None and index >= len(self.questions)):
            size = f" of {len(self.questions):,} questions" if self.questions is not None else ""
            self._problem("bad-index", f"{where}: index {index} is outside the test file{size}")
            return
        if index in self.answers:
            first = self.answers[index][0]
            self._problem(
                "duplicate",
                f"{where}: a second answer for question {index} (first: record {first})",
            )
            return
        out: dict[str, Any] = {"index": index}
        if self.questions is not None:
            q = self.questions[index]
            if not self._agrees(where, q, known):
                return
            out |= {"id": q.sample_id, "qa_type": q.qa_type}
        else:
            out |= {k: known[k] for k in ("id", "qa_type") if isinstance(known.get(k), str)}
        out["prediction"] = prediction
        self.answers[index] = (record, out)

    def _agrees(self, where: str, q: Question, known: Mapping[str, Any]) -> bool:
        said = [
            (name, known[name], want)
            for name, want in (("id", q.sample_id), ("qa_type", q.qa_type))
            if isinstance(known.get(name), str) and known[name] != want
        ]
        text = known.get("question")
        if isinstance(text, str) and q.text and q.text not in _plain(text):
            said.append(("question", text[:120], q.text[:120]))
        self.mismatched += bool(said)
        for name, got, want in said:
            self._problem(
                "index-mismatch",
                f"{where}: its {name} is {got!r}, but question {q.index} of the test file has "
                f"{want!r}",
            )
        return not said

    def _problem(self, code: str, message: str) -> None:
        self.problems.append(Problem(code, message))

    def result(self, hint: str) -> list[dict[str, Any]]:
        """The submission records in test-file order; raises listing every problem, led by
        ``hint`` when answers and questions disagree (the likely cause, said once)."""
        if not self.answers and not self.problems:
            self._problem("no-records", "the file holds no answers")
        if self.problems:
            found = ProblemList()
            if self.mismatched:
                total = len(self.answers) + self.mismatched
                message = (
                    f"{self.mismatched:,} of {total:,} answers are not about the question at "
                    f"their index in the test file; {hint}"
                )
                found.add(Problem("not-in-test-order", message))
            for p in self.problems:
                found.add(p)
            raise InvalidSubmissionError(found, self.filename)
        return [out for _, (_, out) in sorted(self.answers.items())]


class LmmsEvalImporter:
    """lmms-eval's ``--log_samples`` output: one JSON object per line, per answered document.

    The answer is the first string of ``filtered_resps`` (what the task's filters kept; since
    lmms-eval 0.7 a bare string for one-request tasks), else of ``resps``. ``doc_id`` is the
    document's position in the task's test split, which is the test file's order when the
    task loads that file unfiltered (the task ``medvidbench export-task lmms-eval`` writes
    does). Given the test file, each sample's prompt (``input``) must contain the question at
    its ``doc_id``.
    """

    name = "lmms-eval"
    summary = "lmms-eval --log_samples output (<date>_samples_<task>.jsonl)"

    def to_submission(
        self,
        source: bytes,
        *,
        filename: str,
        questions: Sequence[Mapping[str, Any]] | None,
    ) -> list[dict[str, Any]]:
        found = _Collector(filename, questions)
        for n, line in enumerate(source.splitlines()):
            if not line.strip():
                continue
            where = f"line {n + 1}"
            try:
                sample = msgspec.json.decode(line)
            except msgspec.DecodeError as exc:
                found._problem("not-json", f"{where}: not a JSON object ({exc})")
                continue
            if not isinstance(sample, dict):
                found._problem("wrong-type", f"{where}: expected a JSON object per line")
                continue
            self._sample(found, n, where, sample)
        return found.result(
            "the samples' doc_ids do not follow the test file's order: run the task that "
            "'medvidbench export-task lmms-eval' writes, which loads the test file unfiltered"
        )

    def task_files(
        self, questions: Sequence[Mapping[str, Any]] | None, folder: Path
    ) -> dict[str, bytes]:
        """The MedVidBench task for lmms-eval, file name -> content, to be written into
        ``folder`` (``medvidbench export-task lmms-eval``)."""
        from medvidbench.benchmarks.medvidbench.lmms_eval_task import task_files

        views = question_view(questions) if questions is not None else None
        return task_files(questions, views, folder)

    @staticmethod
    def _sample(found: _Collector, n: int, where: str, sample: dict[str, Any]) -> None:
        ours = sample.get(SUBMISSION_METRIC)
        if isinstance(ours, dict) and isinstance(ours.get("index"), int):
            text = ours.get("prediction")
            if isinstance(text, str):  # our own task's record: exact by construction
                found.add(
                    n, where, ours["index"], text, id=ours.get("id"), qa_type=ours.get("qa_type")
                )
                return
        doc_id = sample.get("doc_id")
        if not isinstance(doc_id, int) or isinstance(doc_id, bool):
            found._problem(
                "missing-field", f"{where}: expected an integer 'doc_id', got {doc_id!r}"
            )
            return
        where = f"{where} (doc_id {doc_id})"
        text = _first_text(sample.get("filtered_resps"))
        if text is None:
            text = _first_text(sample.get("resps"))
        if text is None:
            found._problem(
                "missing-field", f"{where}: no answer text in 'filtered_resps' or 'resps'"
            )
            return
        doc = sample.get("doc")
        doc = doc if isinstance(doc, dict) else {}  # kept by lmms-eval before 0.4
        prompt = sample.get("input")
        if not isinstance(prompt, str):
            args = sample.get("arguments")
            prompt = _first_text(args) if isinstance(args, list) else None
        found.add(
            n,
            where,
            doc_id,
            text,
            question=prompt,
            id=doc.get("id"),
            qa_type=doc.get("qa_type"),
        )


class VlmEvalKitImporter:
    """VLMEvalKit's prediction file: the dataset's table with a ``prediction`` column added.

    ``index`` must be the question's position in the test file (build the VLMEvalKit dataset
    TSV that way); a ``question`` column, when present and the test file is given, must match
    the question at that position. Reads ``.xlsx`` (VLMEvalKit's default; needs the ``xlsx``
    extra: openpyxl), ``.tsv`` and ``.json`` (``PRED_FORMAT=tsv|json``).
    """

    name = "vlmevalkit"
    summary = "VLMEvalKit prediction file (<model>_<dataset>.xlsx, .tsv or .json)"

    def to_submission(
        self,
        source: bytes,
        *,
        filename: str,
        questions: Sequence[Mapping[str, Any]] | None,
    ) -> list[dict[str, Any]]:
        from medvidbench.core.tables import read_table  # csv, zipfile: only for a table

        rows = read_table(source, filename, _row_limit(questions), ("index", "prediction"))
        found = _Collector(filename, questions)
        for n, row in enumerate(rows):
            where = f"row {n + 2}"  # the spreadsheet's own numbering: the header is row 1
            index = _integer(row.get("index"))
            if index is None:
                found._problem(
                    "missing-field",
                    f"{where}: expected an integer 'index', got {row.get('index')!r}",
                )
                continue
            if "prediction" not in row:
                found._problem("missing-field", f"{where}: no 'prediction' column")
                break
            text = _cell_text(row["prediction"])
            known = {
                k: row[k] for k in ("question", "id", "qa_type") if isinstance(row.get(k), str)
            }
            found.add(n, f"{where} (index {index})", index, text, **known)
        return found.result(
            "the file's 'index' column does not follow the test file's order: build the "
            "VLMEvalKit dataset with index = the question's position in the test file"
        )


def _integer(value: Any) -> int | None:
    """An index cell: an int, an integral float (a spreadsheet's numbers), or digits."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _cell_text(value: Any) -> str:
    """A prediction cell as text: VLMEvalKit writes ``str(answer)``; an empty cell is ''."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


# A prediction table has one row per question: twice the test file's questions plus a margin;
# without the test file, core.tables' limit (the training-scale set's 531,850 with room).
def _row_limit(questions: Sequence[Any] | None) -> int:
    from medvidbench.core.tables import MAX_ROWS

    return MAX_ROWS if questions is None else 2 * len(questions) + 1_000


def _invalid(filename: str, message: str) -> InvalidSubmissionError:
    problems = ProblemList()
    problems.add(Problem("unreadable", message))
    return InvalidSubmissionError(problems, filename)


IMPORTERS: dict[str, LmmsEvalImporter | VlmEvalKitImporter] = {
    i.name: i for i in (LmmsEvalImporter(), VlmEvalKitImporter())
}
