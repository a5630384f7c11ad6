"""VLMEvalKit's rule-based multiple-choice reading (core/answers/vlmevalkit.py) against
VLMEvalKit's own outputs.

tests/data/gmai_mmbench/vectors.json holds what the unmodified upstream functions
(``can_infer_option``, ``can_infer_text``, ``can_infer``, ``extract_answer_from_item`` with no
judge, ``eval_vanilla``) returned on 71 hand-written answers: ``expected`` at
open-compass/VLMEvalKit commit e8e78f05f3080fe28154f2130321f17951c3be94 (rule set
``vlmevalkit``), ``expected_by_version`` at c026693a1cdac9292447eb480579dc2e11fb6f1c
(``vlmevalkit-2024``) and 0bccf4527f5eb4c2d5837a6492e379f4ca1be63f (``vlmevalkit-2025-08``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from medvidbench.core.answers.choices import EXTRACTIONS, extract
from medvidbench.core.answers.vlmevalkit import (
    NO_ANSWER,
    PANDAS_MISSING,
    RULE_SETS,
    as_read_back,
    is_missing,
    letter_rules,
    option_text,
    read_answer,
)

VECTORS = json.loads(
    (Path(__file__).parent / "data" / "gmai_mmbench" / "vectors.json").read_text("utf-8")
)
CURRENT_COMMIT = "e8e78f05f3080fe28154f2130321f17951c3be94"
# the vectors' names for the older commits -> our rule sets, with the commit each was run at
OLDER = {
    "v0_pre_2025-08-04": ("vlmevalkit-2024", "c026693a1cdac9292447eb480579dc2e11fb6f1c"),
    "v1_2025-08-04_to_2026-06-17": (
        "vlmevalkit-2025-08",
        "0bccf4527f5eb4c2d5837a6492e379f4ca1be63f",
    ),
}
CASES = VECTORS["extract"]


def _verbose(case: dict[str, Any]) -> bool:
    """VLMEvalKit reads VERBOSE as any non-empty string (even "0")."""
    return bool((case["env"] or {}).get("VERBOSE"))


def _can_infer(found: Any) -> Any:
    """A reading as VLMEvalKit's can_infer returns it: the letter, or False when no rule read."""
    return False if found.rule == "none" else found.letter


def test_the_vectors_are_the_commits_we_name() -> None:
    assert VECTORS["about"]["commit"] == CURRENT_COMMIT
    assert RULE_SETS["vlmevalkit"].commit == CURRENT_COMMIT
    older = VECTORS["about"]["older_versions"]
    for key, (name, commit) in OLDER.items():
        assert older[key]["commit"] == commit == RULE_SETS[name].commit
    assert len(CASES) == 71


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_rule_as_vlmevalkit_at_e8e78f05(case: dict[str, Any]) -> None:
    text, options, want = case["prediction"], case["options"], case["expected"]
    verbose = _verbose(case)
    letter = letter_rules(text, options, verbose=verbose)
    assert (letter.letter if letter else False) == want["can_infer_option"]
    assert (option_text(text, options) or False) == want["can_infer_text"]
    found = read_answer(text, options, verbose=verbose)
    assert _can_infer(found) == want["can_infer"]
    assert found.letter == want["extracted"]
    assert int(found.letter == case["answer"]) == want["hit"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_older_rule_set_as_vlmevalkit_then(case: dict[str, Any]) -> None:
    for key, (name, _) in OLDER.items():
        want = case["expected_by_version"][key]
        found = read_answer(
            case["prediction"], case["options"], RULE_SETS[name], verbose=_verbose(case)
        )
        assert (_can_infer(found), found.letter) == (want["can_infer"], want["extracted"]), name
        assert int(found.letter == case["answer"]) == want["hit"]


# the registered extraction runs without VERBOSE, as run.py does
PLAIN = [c for c in CASES if not c["env"]]


@pytest.mark.parametrize("case", PLAIN, ids=[c["id"] for c in PLAIN])
def test_the_registered_extraction_gives_the_letter_or_none(case: dict[str, Any]) -> None:
    want = case["expected"]["extracted"]
    got = extract("vlmevalkit", case["prediction"], case["options"])
    assert got == (None if want == NO_ANSWER else want)


def test_it_is_registered_beside_the_others() -> None:
    assert {"strict-match", "flexible-extract", "vlmevalkit"} <= set(EXTRACTIONS)
    # "Z" is a letter only when it is an option: then VLMEvalKit's comparison is kept
    options = {letter: f"option {letter}" for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
    assert extract("vlmevalkit", "Cannot determine the answer", options) == "Z"


def test_seven_vectors_tell_the_rule_sets_apart() -> None:
    differ = [
        c["id"]
        for c in CASES
        if len(
            {c["expected"]["extracted"]}
            | {v["extracted"] for v in c["expected_by_version"].values()}
        )
        > 1
    ]
    assert len(differ) == 7  # spec.md: 7 of the 71 vectors differ between versions
    assert "letter_too_early" in differ and "lower_answer_is" in differ


@pytest.mark.parametrize(
    ("cell", "missing"),
    [("None", True), ("NA", True), ("", True), ("null", True), ("#N/A", True), (" NA", False),
     ("none", False), ("N.A.", False), ("B", False)],
)  # fmt: skip
def test_pandas_missing_cells(cell: str, missing: bool) -> None:
    assert is_missing(cell) is missing
    assert as_read_back(cell) == ("nan" if missing else cell)
    assert len(PANDAS_MISSING) == 19  # pandas' default na_values, whole cells only


def test_hostile_answers_are_read_in_linear_time() -> None:
    options = {"A": "pneumonia", "B": "normal", "C": "tuberculosis", "D": "lung cancer"}
    # the "answer is X" pattern retried at every "correct": linear through core.linear_re
    text = "correct " * 4000 + "answer  is  **b**"
    started = time.perf_counter()
    assert read_answer(text, options).letter == "B"
    assert read_answer("correct answer is" * 2000, options).letter == NO_ANSWER
    assert time.perf_counter() - started < 5
