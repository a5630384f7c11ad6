"""Reading judge answers: upstream's line variants and JSON; anything else is a failed attempt."""

from __future__ import annotations

import pytest

from medvidbench.benchmarks.medvidbench.rubric import ASPECT_CODES, PROMPT_VERSION, RUBRIC
from medvidbench.core.judge.parse import JudgeAnswerError, parse_scores

FULL = {"R2": 4, "R3": 3, "R8": 5, "R5": 4, "R4": 5}


@pytest.mark.parametrize(
    "text",
    [
        "R2: 4\nR3: 3\nR8: 5\nR5: 4\nR4: 5",
        "R2=4\nR3 = 3\nR8:5\nR5 : 4\nR4: 5",
        "R2 4\nR3 3\nR8 5\nR5 4\nR4 5",
        "**R2**: 4\n**R3**: 3\n**R8**: 5\n**R5**: 4\n**R4**: 5",
        "Scores:\nR2: **4**\nR3: 3\nR8: 5.0\nR5: 4\nR4: 5\nReasoning: fine.",
        '{"R2": 4, "R3": 3, "R8": 5, "R5": 4, "R4": 5}',
        '```json\n{"R2": "4", "R3": 3, "R8": 5, "R5": 4, "R4": 5}\n```',
    ],
)
def test_accepted_formats(text: str) -> None:
    assert parse_scores(text, ASPECT_CODES) == FULL


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("R2: 4\nR3: 3\nR8: 5\nR5: 4", "R4 is missing"),
        ("R2: 6\nR3: 3\nR8: 5\nR5: 4\nR4: 5", "R2 is '6', outside"),
        ("R2: 0\nR3: 3\nR8: 5\nR5: 4\nR4: 5", "R2 is '0', outside"),
        ("R2: 3.5\nR3: 3\nR8: 5\nR5: 4\nR4: 5", "R2 is '3.5', outside"),
        ('{"R2": 4, "R3": 3}', "R8, R5, R4 missing"),
        ('{"R2": true, "R3": 3, "R8": 5, "R5": 4, "R4": 5}', "R2 is not a number"),
        ("I think it is quite good.", "R2 is missing"),
        ("", "R2 is missing"),
    ],
)
def test_refused_answers(text: str, reason: str) -> None:
    with pytest.raises(JudgeAnswerError, match=reason):
        parse_scores(text, ASPECT_CODES)


def test_prompt_contains_both_texts_and_every_aspect() -> None:
    prompt = RUBRIC.prompt("region_caption", "the pen marks the skin", "a pen marks the incision")
    assert "the pen marks the skin" in prompt and "a pen marks the incision" in prompt
    for code in ASPECT_CODES:
        assert f"{code}: <score>" in prompt
    assert "region caption" in prompt
    assert len(PROMPT_VERSION) == 12


def test_a_benchmark_rubric_is_read_by_the_generic_parser_and_fake_judge() -> None:
    """Any rubric works: the parser reads the codes it is given, the fake judge answers the
    codes the prompt's answer format asks for."""
    from medvidbench.core.judge.fake_server import overlap_responder
    from medvidbench.core.judge.rubric import Aspect, Rubric

    anchors = ("1", "2", "3", "4", "5")
    rubric = Rubric(
        (Aspect("A1", "Accuracy", "Right?", anchors), Aspect("C1", "Clarity", "Clear?", anchors)),
        {"note": "clinical note"},
        "Grade the {task}.\nREFERENCE:\n{reference}\n\nPREDICTION:\n{prediction}\n\n"
        "{aspects}\n{format}",
    )
    prompt = rubric.prompt("note", "same words", "same words")
    answer = overlap_responder(prompt)
    assert parse_scores(answer, rubric.codes) == {"A1": 5, "C1": 4}
    assert rubric.version != PROMPT_VERSION and len(rubric.version) == 12
