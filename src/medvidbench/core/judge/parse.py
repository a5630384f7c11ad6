"""Reading a judge's answer into five 1-5 scores, or refusing it.

Accepted: the line format (``R2: 4``) with the variants upstream accepts (``R2 = 4``,
``R2 4``, ``**R2**: 4``), and a JSON object (``{"R2": 4, ...}``, possibly in a code fence). A
value outside 1-5, a non-integer or a missing aspect makes the attempt fail (and be retried);
it is never turned into a score.
"""

from __future__ import annotations

import json
import re
from functools import cache


@cache
def _patterns(code: str) -> tuple[re.Pattern[str], ...]:
    """The ways a judge writes one aspect's score: ``R2: 4``, ``**R2**: 4``, ``R2 4``."""
    c = re.escape(code)
    return (
        re.compile(rf"\b{c}\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)"),
        re.compile(rf"\*\*{c}\*\*\s*[:=]?\s*(-?\d+(?:\.\d+)?)"),
        re.compile(rf"\b{c}\s+(-?\d+(?:\.\d+)?)"),
    )


_JSON = re.compile(r"\{.*\}", re.DOTALL)


class JudgeAnswerError(ValueError):
    """The judge's answer could not be read as five scores from 1 to 5."""


def _score(raw: object, code: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise JudgeAnswerError(f"{code} is not a number: {raw!r}")
    try:
        value = float(raw)
    except ValueError:
        raise JudgeAnswerError(f"{code} is not a number: {raw!r}") from None
    if value != int(value) or not 1 <= value <= 5:
        raise JudgeAnswerError(f"{code} is {raw!r}, outside the whole numbers 1-5")
    return int(value)


def parse_scores(text: str, codes: tuple[str, ...]) -> dict[str, int]:
    """The score of every aspect ``codes`` names, from a judge's answer.

    Raises:
        JudgeAnswerError: when an aspect is missing or its value is not a whole number 1-5.

    Examples:
        >>> codes = ("R2", "R3", "R8", "R5", "R4")
        >>> parse_scores("R2: 4\\nR3: 3\\nR8: 5\\nR5: 4\\nR4: 5", codes)
        {'R2': 4, 'R3': 3, 'R8': 5, 'R5': 4, 'R4': 5}
        >>> parse_scores('{"R2": 2, "R3": 2, "R8": 2, "R5": 2, "R4": 2}', codes)["R8"]
        2
    """
    found = _from_json(text, codes)
    if found is not None:
        return found
    scores = {}
    for code in codes:
        match = next((m for p in _patterns(code) if (m := p.search(text))), None)
        if match is None:
            raise JudgeAnswerError(f"{code} is missing from the answer")
        scores[code] = _score(match.group(1), code)
    return scores


def _from_json(text: str, codes: tuple[str, ...]) -> dict[str, int] | None:
    m = _JSON.search(text)
    if not m:
        return None
    try:
        data = json.loads(m.group(0))
    except ValueError:
        return None
    if not isinstance(data, dict) or not any(code in data for code in codes):
        return None
    missing = [code for code in codes if code not in data]
    if missing:
        raise JudgeAnswerError(f"{', '.join(missing)} missing from the answer")
    return {code: _score(data[code], code) for code in codes}
