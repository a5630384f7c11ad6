"""Reading judge answers: upstream's line variants and JSON; anything else is a failed attempt."""

from __future__ import annotations

import pytest

from medvidbench.core.judge.parse import JudgeAnswerError, parse_scores
from medvidbench.core.judge.rubric import ASPECT_CODES, PROMPT_VERSION, build_prompt

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
    assert parse_scores(text) == FULL


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
        parse_scores(text)


def test_prompt_contains_both_texts_and_every_aspect() -> None:
    prompt = build_prompt("region_caption", "the pen marks the skin", "a pen marks the incision")
    assert "the pen marks the skin" in prompt and "a pen marks the incision" in prompt
    for code in ASPECT_CODES:
        assert f"{code}: <score>" in prompt
    assert "region caption" in prompt
    assert len(PROMPT_VERSION) == 12
