"""The shared answer library (core/answers): named multiple-choice extractions and SQuAD's
short-answer metrics, on values worked out by hand from the published definitions."""

from __future__ import annotations

import pytest

from medvidbench.core.answers.choices import EXTRACTIONS, extract
from medvidbench.core.answers.text import exact_match, normalize_answer, token_f1

OPTIONS = {"A": "Left atrium", "B": "Right ventricle", "C": "Aorta", "D": "Pulmonary vein"}


@pytest.mark.parametrize(
    ("text", "strict", "flexible"),
    [
        ("B", "B", "B"),
        ("(C).", "C", "C"),
        ("Answer: D", "D", "D"),
        ("I think the answer is (a).", None, "A"),
        ("Between A) and C), C).", None, "C"),
        ("It drains into the aorta.", None, "C"),
        ("Aorta or pulmonary vein?", None, None),  # quotes two options
        ("E", None, None),  # not an option
        ("", None, None),
    ],
)
def test_named_extractions(text: str, strict: str | None, flexible: str | None) -> None:
    assert extract("strict-match", text, OPTIONS) == strict
    assert extract("flexible-extract", text, OPTIONS) == flexible


def test_an_unknown_extraction_is_named() -> None:
    with pytest.raises(KeyError, match="no extraction 'psychic'; there are: strict-match"):
        extract("psychic", "A", OPTIONS)
    assert set(EXTRACTIONS) >= {"strict-match", "flexible-extract"}


@pytest.mark.parametrize(
    ("answer", "references", "em", "f1"),
    [
        ("The Aorta.", ["aorta"], 1.0, 1.0),
        ("aorta", ["ascending aorta", "aorta"], 1.0, 1.0),  # the best reference counts
        # 2 shared of 3 answer tokens and 3 reference tokens: P = R = 2/3, F1 = 2/3
        ("left coronary artery", ["right coronary artery"], 0.0, 2 / 3),
        # multiplicity: "artery artery" shares one "artery" with the reference
        ("artery artery", ["artery"], 0.0, 2 * 0.5 * 1.0 / 1.5),
        ("", [""], 1.0, 1.0),  # v2.0: both empty
        ("the", ["a"], 1.0, 1.0),  # articles only: both normalise to nothing
        ("aorta", [""], 0.0, 0.0),
        ("aorta", [], 0.0, 0.0),
    ],
)
def test_squad_exact_match_and_token_f1(
    answer: str, references: list[str], em: float, f1: float
) -> None:
    assert exact_match(answer, references) == em
    assert token_f1(answer, references) == pytest.approx(f1, abs=1e-12)


def test_normalisation_removes_case_punctuation_articles_and_spaces() -> None:
    assert normalize_answer("  An  Anastomosis--the END. ") == "anastomosisthe end"
    assert normalize_answer("A.B.C") == "abc"
