"""``medvidbench import vlmevalkit``: VLMEvalKit's GMAI-MMBench files as a submission.

VLMEvalKit's prediction file (``{model}_GMAI-MMBench_VAL.xlsx``, ``.tsv`` or ``.json``) or its
result file (``..._exact_matching_result.xlsx``) becomes a JSON list of ``{"index",
"prediction"}``: each row's VLMEvalKit ``index`` and its raw answer, never its ``hit``. Given
the test file's rows (``--questions``: each needs ``index`` and ``question``), every index must
be one of its questions and every row's question that question's; the records then follow the
test file's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from medvidbench.core.errors import (
    InvalidGroundTruthError,
    InvalidSubmissionError,
    Problem,
    ProblemList,
)


class VlmEvalKitImporter:
    """VLMEvalKit's GMAI-MMBench prediction or result table -> ``[{"index", "prediction"}]``."""

    name = "vlmevalkit"
    summary = "VLMEvalKit prediction file (<model>_GMAI-MMBench_VAL.xlsx, .tsv or .json)"

    def to_submission(
        self,
        source: bytes,
        *,
        filename: str,
        questions: Sequence[Mapping[str, Any]] | None,
    ) -> list[dict[str, Any]]:
        """The submission records; raises listing every problem of the file.

        Raises:
            InvalidSubmissionError: an unreadable file, a row without an integer index or a
                text answer, an index answered twice or (with ``questions``) not a question of
                the test file, or a row about another question.
            InvalidGroundTruthError: a ``questions`` row without an integer ``index``.
        """
        from medvidbench.benchmarks.gmai_mmbench.predictions import read_answers, same_question
        from medvidbench.core.tables import MAX_ROWS

        asked = _asked(questions) if questions is not None else None
        limit = MAX_ROWS if asked is None else 2 * len(asked) + 1_000
        found = read_answers(source, filename, limit)
        problems = ProblemList()
        for p in found.problems:
            problems.add(p)
        kept: dict[int, str] = {}
        for a in found.answers:
            if a.key in kept:
                problems.add(Problem("duplicate", f"{a.where}: index answered twice", a.record))
            elif asked is not None and a.key not in asked:
                problems.add(Problem("no-such-item", f"{a.where}: no such question", a.record))
            elif asked is not None and a.question and not same_question(a.question, asked[a.key]):
                message = f"{a.where}: its question is not the test file's question {a.key}"
                problems.add(Problem("index-mismatch", message, a.record))
            else:
                kept[a.key] = a.text
        if not kept and not problems:
            problems.add(Problem("no-records", "the file holds no answers"))
        if problems:
            raise InvalidSubmissionError(problems, filename)
        order = list(asked) if asked is not None else sorted(kept)
        return [{"index": k, "prediction": kept[k]} for k in order if k in kept]


def _asked(questions: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """The test file's questions by index, in its order.

    Raises:
        InvalidGroundTruthError: a row without an integer ``index`` (every one listed).
    """
    from medvidbench.benchmarks.gmai_mmbench.cells import cell_integer, cell_text

    asked: dict[int, str] = {}
    problems = ProblemList()
    for n, row in enumerate(questions):
        fields = {str(k).lower(): v for k, v in row.items()}
        key = cell_integer(fields.get("index"))
        if key is None:
            problems.add(Problem("bad-index", f"question {n}: no integer 'index'", n))
            continue
        asked[key] = cell_text(fields.get("question")) or ""
    if problems:
        raise InvalidGroundTruthError(problems, "questions")
    return asked


IMPORTERS: dict[str, VlmEvalKitImporter] = {VlmEvalKitImporter.name: VlmEvalKitImporter()}
