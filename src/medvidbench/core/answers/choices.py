"""Named extractions of a multiple-choice answer's option letter, for any benchmark.

``strict-match`` reads an answer only when it is nothing but an option letter (``B``, ``(B)``,
``B.``, ``Answer: B``); ``flexible-extract`` also finds the letter inside prose (the last
"answer is (C)", else the last parenthesised or bracketed letter), else the one option whose
text the answer quotes (the names lm-evaluation-harness gives its two answer filters). A model
that knows the answer but not the format scores on the second and not the first, which is what
reporting both shows. :data:`EXTRACTIONS` holds every named extraction with one signature,
``(text, options) -> letter or None``, so a benchmark picks them by name (a profile's variant,
or metrics side by side) and a new benchmark reuses them instead of copying.

Every pattern here is a plain alternation with no nested repetition, so its cost is linear in
the answer's length (answers are capped at ``MAX_ANSWER_CHARS`` when matched).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from medvidbench.core.answers.vlmevalkit import VLMEVALKIT, vlmevalkit_letter

STRICT_MATCH = "strict-match"
FLEXIBLE_EXTRACT = "flexible-extract"

_STRICT = re.compile(r"\s*(?:[Aa]nswer\s*:\s*)?\(?([A-Z])\)?\.?\s*")
# "answer is C", "Answer: (c)": a bare letter must be a capital ("the answer is a nerve")
_STATED = re.compile(r"(?i:answer\s*(?:is\s*:?|:))\s*(?:\(([A-Za-z])\)|([A-Z])\b)")
_MARKED = re.compile(r"[(\[]([A-Z])[)\]]|(?<![A-Za-z])([A-Z])\)")


def strict_match(text: str, letters: str) -> str | None:
    """The option letter when the whole answer is one, else None.

    Examples:
        >>> strict_match(" (B). ", "ABCD"), strict_match("Answer: C", "ABCD")
        ('B', 'C')
        >>> strict_match("B because the pancreas", "ABCD") is None
        True
        >>> strict_match("E", "ABCD") is None  # not one of the item's options
        True
    """
    m = _STRICT.fullmatch(text)
    return m.group(1) if m and m.group(1) in letters else None


def flexible_extract(text: str, options: Mapping[str, str]) -> str | None:
    """The option letter an answer names anywhere, else the one option it quotes, else None.

    Examples:
        >>> opts = {"A": "Liver", "B": "Pancreas", "C": "Spleen"}
        >>> flexible_extract("I think the answer is (b), the pancreas.", opts)
        'B'
        >>> flexible_extract("Between A) and C) I pick C).", opts)
        'C'
        >>> flexible_extract("It is made in the spleen.", opts)
        'C'
        >>> flexible_extract("Liver or spleen?", opts) is None  # quotes two options
        True
    """
    letters = "".join(options)
    found = strict_match(text, letters)
    if found is not None:
        return found
    stated: list[str] = [
        (a or b).upper() for a, b in _STATED.findall(text) if (a or b).upper() in letters
    ]
    if stated:
        return stated[-1]
    marked: list[str] = [a or b for a, b in _MARKED.findall(text) if (a or b) in letters]
    if marked:
        return marked[-1]
    lowered = text.casefold()
    quoted = [k for k, v in options.items() if v.casefold() in lowered]
    return quoted[0] if len(quoted) == 1 else None


def _strict(text: str, options: Mapping[str, str]) -> str | None:
    return strict_match(text, "".join(options))


Extraction = Callable[[str, Mapping[str, str]], str | None]
"""``(answer, options by letter) -> the option letter read, or None``."""

EXTRACTIONS: dict[str, Extraction] = {
    STRICT_MATCH: _strict,
    FLEXIBLE_EXTRACT: flexible_extract,
    VLMEVALKIT: vlmevalkit_letter,  # VLMEvalKit's rules, exactly (core/answers/vlmevalkit.py)
}


def extract(name: str, text: str, options: Mapping[str, str]) -> str | None:
    """The option letter the named extraction reads in ``text``.

    Raises:
        KeyError: for an extraction not in :data:`EXTRACTIONS` (naming those there are).

    Examples:
        >>> extract("flexible-extract", "The answer is (A).", {"A": "Liver", "B": "Spleen"})
        'A'
    """
    if name not in EXTRACTIONS:
        raise KeyError(f"no extraction {name!r}; there are: {', '.join(EXTRACTIONS)}")
    return EXTRACTIONS[name](text, options)
