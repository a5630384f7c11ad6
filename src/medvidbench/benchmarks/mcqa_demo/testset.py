"""The MCQA-Demo test set: multiple-choice questions with one correct option each.

File: a JSON list of ``{"id", "subject", "question", "options": {"A": ..., "B": ...},
"answer": "B"}``; 2-5 options lettered from A without gaps; ids unique. The test set is the
whole benchmark: there is no training split.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from medvidbench.core.errors import InvalidGroundTruthError, Problem, ProblemList
from medvidbench.core.formats import DEFAULT_MAX_BYTES, read_bytes

TASK = "mcqa"
LETTERS = "ABCDE"


@dataclass(frozen=True, slots=True)
class Question:
    """One test question (the kernel's ``TestItem``: index, sample_id, task, dataset)."""

    index: int
    sample_id: str
    task: str
    dataset: str  # the subject
    question: str
    options: dict[str, str]
    answer: str

    @property
    def letters(self) -> str:
        return "".join(self.options)


@dataclass(slots=True)
class QuestionSet:
    """A loaded test set: questions in file order, ``samples[i].index == i``."""

    samples: list[Question]
    sha256: str
    warnings: ProblemList = field(default_factory=ProblemList)

    def __len__(self) -> int:
        return len(self.samples)


def _question(i: int, rec: Any, problems: ProblemList) -> Question | None:
    where = f"record {i}"
    if not isinstance(rec, dict):
        problems.add(
            Problem("wrong-type", f"{where}: expected an object, got {type(rec).__name__}", i)
        )
        return None
    missing = [
        k for k in ("id", "subject", "question", "answer") if not isinstance(rec.get(k), str)
    ]
    if missing:
        problems.add(Problem("missing-field", f"{where}: expected string field(s) {missing}", i))
        return None
    options = rec.get("options")
    if (
        not isinstance(options, dict)
        or not 2 <= len(options) <= len(LETTERS)
        or "".join(options) != LETTERS[: len(options)]
        or not all(isinstance(v, str) and v.strip() for v in options.values())
    ):
        problems.add(
            Problem(
                "bad-options", f"{where}: options must map A, B, ... (2-5) to texts", i, rec["id"]
            )
        )
        return None
    if rec["answer"] not in options:
        problems.add(
            Problem(
                "bad-answer", f"{where}: answer {rec['answer'][:5]!r} is no option", i, rec["id"]
            )
        )
        return None
    return Question(
        i, rec["id"], TASK, rec["subject"], rec["question"], dict(options), rec["answer"]
    )


def load_ground_truth(
    source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES
) -> QuestionSet:
    """Load and validate a test set.

    Raises:
        InvalidGroundTruthError: listing every problem, with its record.
    """
    data = source if isinstance(source, bytes) else read_bytes(source, max_bytes)
    problems = ProblemList()
    try:
        raw = json.loads(data)
    except ValueError as exc:
        problems.add(Problem("not-json", f"the test set is not JSON: {exc}"))
        raise InvalidGroundTruthError(problems) from None
    if not isinstance(raw, list):
        problems.add(Problem("wrong-type", "the test set must be a JSON list of questions"))
        raise InvalidGroundTruthError(problems)
    questions: list[Question] = []
    seen: set[str] = set()
    for i, rec in enumerate(raw):
        q = _question(i, rec, problems)
        if q is None:
            continue
        if q.sample_id in seen:
            problems.add(Problem("duplicate-id", f"record {i}: id {q.sample_id!r} repeated", i))
            continue
        seen.add(q.sample_id)
        questions.append(replace(q, index=len(questions)))
    if problems:
        raise InvalidGroundTruthError(problems)
    return QuestionSet(questions, hashlib.sha256(data).hexdigest())
