"""Reading a MedFrameQA answer's option letter, as the official evaluation script reads it.

The official parser (``parse_multi_choice_response`` in ``src/eval_process.py`` of
haojinw0027/MedFrameQA, commit e83fbe3) is reproduced rule for rule from its specification
(docs/benchmarks/medframeqa.md), quirks included, and checked against the official code's own
outputs (tests/data/medframeqa/vectors.json). Its rules, first success wins:

1. ``boxed{X}`` (case-sensitive, no backslash needed): the FIRST box holding an option letter.
2. Text markers in a fixed priority, ``Answer:``, ``Answer*``, ``Final Answer``, ``final
   answer``: the first of them found anywhere is the one used (the others are never tried), and
   what follows its LAST occurrence, stripped, is its tail. The option letter whose first
   occurrence in the tail comes earliest wins, inside words too (``CT`` reads as C).
3. Otherwise, on the whole answer with ``, . ! ? ; : '`` stripped from both ends: a letter in
   parentheses, ``(X)``; else a letter followed by a period, ``X.`` (inside words too); else,
   for an answer of more than 5 words, an option's text (cut at its first ``". "``) found
   case-insensitively. Among several candidates, the one whose last occurrence starts latest
   wins; a tie goes to the earliest option.
4. Nothing: ``""``, scored wrong. A bare ``B`` is never read.

The ``tolerant`` reading keeps every letter the official rules read and, only where they read
none, asks the shared ``flexible-extract`` extraction (a bare letter, ``(b)``, "the answer is
C"). Everything here is plain substring search and one linear pattern: the cost is linear in the
answer's length.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from medvidbench.benchmarks.medframeqa.testset import LETTERS
from medvidbench.core.answers.choices import flexible_extract

MARKERS = ("Answer:", "Answer*", "Final Answer", "final answer")
_BOXED = re.compile(r"boxed\{([A-Z])\}")
# Stripped from both ends before the fallback, one character kind at a time, in this order.
_STRIPPED = (",", ".", "!", "?", ";", ":", "'")
_MIN_WORDS_FOR_TEXT = 6  # option texts are looked for only in answers of more than 5 words

# How an answer was read, for the report's diagnostics.
BOXED, MARKER, PARENTHESIS, PERIOD, OPTION_TEXT, TOLERANT, NONE = (
    "boxed",
    "marker",
    "parenthesis",
    "letter-period",
    "option-text",
    "tolerant",
    "none",
)
RULES = (BOXED, MARKER, PARENTHESIS, PERIOD, OPTION_TEXT, TOLERANT, NONE)


@dataclass(frozen=True, slots=True)
class Reading:
    """The option letter read (``""``: none) and the rule that read it."""

    letter: str
    rule: str


def option_texts(options: Sequence[str]) -> dict[str, str]:
    """Each letter's text as the official script keeps it: cut at its first ``". "``.

    Examples:
        >>> option_texts(["Stage II. Regional nodes", "Lipoma"])
        {'A': 'Stage II', 'B': 'Lipoma'}
    """
    return {LETTERS[i]: text.split(". ")[0] for i, text in enumerate(options)}


def read_official(text: str, options: Sequence[str]) -> Reading:
    """The letter the official parser reads in ``text``, and the rule that read it.

    Examples:
        >>> opts = ["Pneumonia", "Embolism", "Effusion", "Pneumothorax"]
        >>> read_official("First \\\\boxed{A}, then \\\\boxed{C}", opts).letter
        'A'
        >>> read_official("Answer: CT favours B", opts).letter  # C of "CT" comes first
        'C'
        >>> read_official("B", opts).letter  # a bare letter is never read
        ''
    """
    letters = LETTERS[: len(options)]
    for boxed in _BOXED.findall(text):
        if boxed in letters:
            return Reading(boxed, BOXED)
    tail = _marker_tail(text)
    if tail:
        found = [(tail.find(c), c) for c in letters if c in tail]
        if found:
            return Reading(min(found)[1], MARKER)
    return _fallback(text, letters, option_texts(options))


def _marker_tail(text: str) -> str:
    """What follows the last occurrence of the first marker (by priority) the text holds."""
    for marker in MARKERS:
        at = text.rfind(marker)
        if at != -1:
            return text[at + len(marker) :].strip()
    return ""


def _fallback(text: str, letters: str, texts: dict[str, str]) -> Reading:
    """Rules 5-8: on the whole answer, ends stripped, a space added at each end."""
    for char in _STRIPPED:
        text = text.strip(char)
    text = f" {text} "
    for rule, shape in ((PARENTHESIS, "({})"), (PERIOD, "{}.")):
        candidates = [(c, shape.format(c)) for c in letters if shape.format(c) in text]
        if candidates:
            return Reading(_latest(text, candidates), rule)
    if len(text.split()) >= _MIN_WORDS_FOR_TEXT:
        lowered = text.lower()
        quoted = [(c, texts[c].lower()) for c in letters if texts[c].lower() in lowered]
        if quoted:
            return Reading(_latest(lowered, quoted), OPTION_TEXT)
    return Reading("", NONE)


def _latest(text: str, candidates: list[tuple[str, str]]) -> str:
    """The candidate whose last occurrence starts latest; the earliest candidate on a tie."""
    best, start = candidates[0][0], text.rfind(candidates[0][1])
    for letter, needle in candidates[1:]:
        at = text.rfind(needle)
        if at > start:  # strictly later: a tie keeps the earlier option (numpy's argmax)
            best, start = letter, at
    return best


def read_tolerant(text: str, options: Sequence[str]) -> Reading:
    """The official reading, or where it reads nothing, ``flexible-extract``'s.

    Examples:
        >>> read_tolerant("B", ["x", "y", "z"])
        Reading(letter='B', rule='tolerant')
    """
    official = read_official(text, options)
    if official.letter:
        return official
    found = flexible_extract(text, {LETTERS[i]: o for i, o in enumerate(options)})
    return Reading(found, TOLERANT) if found else official


def official_letter(text: str, options: Sequence[str]) -> str:
    """What the official parser returns: the option letter, or ``""``."""
    return read_official(text, options).letter
