"""VLMEvalKit's rule-based reading of a multiple-choice answer ("exact matching"), exactly.

VLMEvalKit reads the option letter of most of the multiple-choice benchmarks it scores
(MMBench, GMAI-MMBench and many more) with one chain of rules, and asks a judge model only
about the answers those rules cannot read, when a judge is configured at all. This module is
that chain without the judge, written from the rules (docs/benchmarks/gmai-mmbench.md states
each with an example; tests/test_gmai_mmbench.py holds VLMEvalKit's own outputs on 71
answers). For an answer and the item's options (letter -> text), in order, the first rule that
reads something decides:

1. ``refusal``: the answer contains one of :data:`REFUSALS` (case as written): "Z", final.
   Before that, an answer containing :data:`API_FAILURE` skips rules 1-4 (only 5 may read it).
2. ``letter``: the answer with each of :data:`SEPARATORS` made a space, split on whitespace;
   exactly one option letter (a capital) is a whole token, and its first occurrence is among
   the last four tokens (before 2025-08-04: anywhere).
3. ``z``: no option letter is a token but ``Z`` is: "Z".
4. ``answer-is`` (since 2026-06-17): the first "answer is X" (optionally "correct answer is",
   any case, ``*`` allowed before X, X one of a-d/A-D and nothing required after it) whose X,
   made a capital, is an option.
5. ``option-text``: the answer, lower-cased, contains exactly one option's lower-cased text;
   since 2025-08-04 only when the answer is at most twice as long as all option texts together.
6. ``none``: nothing read: VLMEvalKit's pseudo-letter "Z" (always wrong), or, with a judge, the
   judge is asked.

VLMEvalKit reads its files with pandas, so an answer or option text that is exactly one of
pandas' missing-value words (``None``, ``NA``, ``null``, an empty cell...) becomes the text
``nan`` (an answer) or no option at all: :func:`as_read_back` and :func:`is_missing` say what
a table cell becomes, for a benchmark that scores what VLMEvalKit would have read.

Three rule sets are named (:data:`RULE_SETS`), each the rules between two VLMEvalKit commits:
``vlmevalkit`` (current: since a67ace50, 2026-06-17; run at e8e78f05),
``vlmevalkit-2025-08`` (c3371551, 2025-08-04, to a67ace50; run at 0bccf452) and
``vlmevalkit-2024`` (before c3371551; run at c026693a). VLMEvalKit's ``VERBOSE`` environment
variable, which changes rule 2, is the ``verbose`` argument here: this module never reads the
environment.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from medvidbench.core.linear_re import LinearPattern

__all__ = [
    "API_FAILURE",
    "NO_ANSWER",
    "PANDAS_MISSING",
    "REFUSALS",
    "RULE_SETS",
    "SEPARATORS",
    "VLMEVALKIT",
    "Reading",
    "RuleSet",
    "as_read_back",
    "is_missing",
    "letter_rules",
    "option_text",
    "read_answer",
    "vlmevalkit_letter",
]

VLMEVALKIT = "vlmevalkit"
NO_ANSWER = "Z"  # VLMEvalKit's pseudo-letter for "no option": never a right answer

# What each rule is called in a Reading (which rule decided).
REFUSAL, LETTER, Z_TOKEN, ANSWER_IS, OPTION_TEXT, NONE = (
    "refusal",
    "letter",
    "z",
    "answer-is",
    "option-text",
    "none",
)

# The marker VLMEvalKit's API models put in place of an answer they failed to get.
API_FAILURE = "Failed to obtain answer via API"
# Answers VLMEvalKit treats as a refusal ("Z" at once, never sent to a judge); matched as
# written, so "cannot determine the answer" is not one.
REFUSALS = (
    "Sorry, I can't help with images of people yet.",
    "I can't process this file.",
    "I'm sorry, but without the image provided",
    "Cannot determine the answer",
)
# The characters made spaces before an answer is split into tokens (nothing else: full-width
# punctuation stays glued to a letter).
SEPARATORS = ".()[],:;!*#{}"
# The cells pandas reads as missing by default (read_csv and read_excel alike): whole cells only.
PANDAS_MISSING = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)


@dataclass(frozen=True, slots=True)
class RuleSet:
    """VLMEvalKit's rules between two of its commits.

    Attributes:
        name: The rule set's name (a profile's variant).
        since: When these rules took effect (the commit that introduced them, and its date).
        commit: The VLMEvalKit commit whose code produced our test vectors for this set.
        last_tokens: A lone option letter counts only among the answer's last four tokens.
        text_cap: Option texts are looked for only in answers at most twice as long as all
            the option texts together.
        answer_is: The "answer is X" rule is tried when the letter rule reads nothing.
    """

    name: str
    since: str
    commit: str
    last_tokens: bool
    text_cap: bool
    answer_is: bool


RULE_SETS: dict[str, RuleSet] = {
    r.name: r
    for r in (
        RuleSet(
            VLMEVALKIT,
            "a67ace50, 2026-06-17",
            "e8e78f05f3080fe28154f2130321f17951c3be94",
            True,
            True,
            True,
        ),
        RuleSet(
            "vlmevalkit-2025-08",
            "c3371551, 2025-08-04",
            "0bccf4527f5eb4c2d5837a6492e379f4ca1be63f",
            True,
            True,
            False,
        ),
        RuleSet(
            "vlmevalkit-2024",
            "the first GMAI-MMBench support, 2024-08",
            "c026693a1cdac9292447eb480579dc2e11fb6f1c",
            False,
            False,
            False,
        ),
    )
}
CURRENT = RULE_SETS[VLMEVALKIT]


@dataclass(frozen=True, slots=True)
class Reading:
    """What the rules read in one answer.

    Attributes:
        letter: The option letter, or :data:`NO_ANSWER` ("Z") when the rules read no option.
        rule: The rule that decided (``refusal``, ``letter``, ``z``, ``answer-is``,
            ``option-text``), or ``none`` when no rule read anything: the only answers a
            judge would be asked about.
    """

    letter: str
    rule: str


def letter_rules(
    text: str, letters: Collection[str], rules: RuleSet = CURRENT, *, verbose: bool = False
) -> Reading | None:
    """Rules 1-4: a letter (or "Z") read from the answer's tokens or an "answer is X", else
    None (VLMEvalKit's ``can_infer_option``).

    Examples:
        >>> letter_rules("The answer is B.", "ABCD")
        Reading(letter='B', rule='letter')
        >>> letter_rules("Option B is right: the lungs are clear, no sign of it", "ABCD")
        >>> letter_rules("The answer is definitely tuberculosis", "ABCD")  # the d of definitely
        Reading(letter='D', rule='answer-is')
    """
    if API_FAILURE in text:
        return None
    if any(phrase in text for phrase in REFUSALS):
        return Reading(NO_ANSWER, REFUSAL)
    tokens = text
    for c in SEPARATORS:
        tokens = tokens.replace(c, " ")
    words = tokens.split()
    present = set(words)
    found = [c for c in letters if c in present]
    if len(found) == 1:
        # VLMEvalKit's VERBOSE guard: a token "A" in a longer answer may be an article
        if verbose and "A" in present and len(words) > 3:
            return None
        if not rules.last_tokens or words.index(found[0]) >= len(words) - 4:
            return Reading(found[0], LETTER)
    elif not found and NO_ANSWER in present:
        return Reading(NO_ANSWER, Z_TOKEN)
    if rules.answer_is:
        match = _answer_is().search(text)
        if match is not None and (said := str(match.group(1)).upper()) in letters:
            return Reading(said, ANSWER_IS)
    return None


@cache
def _answer_is() -> LinearPattern:
    """The "answer is X" pattern, compiled on first use (importing this module stays cheap);
    its trailing ``\\**`` is upstream's and changes neither what matches first nor X."""
    import re

    from medvidbench.core import linear_re

    return linear_re.compile(r"(?:correct\s+)?answer\s+is\s+\**([ABCD])\**", re.IGNORECASE)


def option_text(text: str, options: Mapping[str, str], rules: RuleSet = CURRENT) -> str | None:
    """Rule 5: the one option whose text the answer contains (both lower-cased), else None
    (VLMEvalKit's ``can_infer_text``).

    Examples:
        >>> option_text("The image shows tuberculosis.", {"A": "pneumonia", "B": "tuberculosis"})
        'B'
        >>> option_text("kidney tumor", {"A": "kidney", "B": "kidney tumor"}) is None  # both
        True
    """
    lowered = text.lower()
    # the cap compares the lower-cased answer with the option texts as they are
    if rules.text_cap and len(lowered) > 2 * sum(len(v) for v in options.values()):
        return None
    found = [k for k, v in options.items() if v.lower() in lowered]
    return found[0] if len(found) == 1 else None


def read_answer(
    text: str, options: Mapping[str, str], rules: RuleSet = CURRENT, *, verbose: bool = False
) -> Reading:
    """The whole chain without a judge: rules 1-4, else 5, else "Z" (VLMEvalKit's
    ``extract_answer_from_item`` with no judge model).

    Examples:
        >>> opts = {"A": "pneumonia", "B": "normal", "C": "tuberculosis"}
        >>> read_answer("C. normal", opts)  # the letter wins over another option's text
        Reading(letter='C', rule='letter')
        >>> read_answer("答案：B", opts)  # full-width colon: one token, no letter
        Reading(letter='Z', rule='none')
    """
    found = letter_rules(text, options, rules, verbose=verbose)
    if found is not None:
        return found
    letter = option_text(text, options, rules)
    return Reading(letter, OPTION_TEXT) if letter is not None else Reading(NO_ANSWER, NONE)


def vlmevalkit_letter(text: str, options: Mapping[str, str]) -> str | None:
    """The ``vlmevalkit`` extraction (current rules, no judge): the option letter read, or
    None for VLMEvalKit's "Z" (unless "Z" is itself an option, when it is returned as
    VLMEvalKit compares it).

    Examples:
        >>> vlmevalkit_letter("**D**", {"A": "x", "B": "y", "C": "z", "D": "w"})
        'D'
        >>> vlmevalkit_letter("Cannot determine the answer", {"A": "x", "B": "y"}) is None
        True
    """
    letter = read_answer(text, options).letter
    return letter if letter in options else None


def is_missing(cell: str) -> bool:
    """Whether pandas reads the cell as missing (an option whose text is ``None`` is no option).

    Examples:
        >>> is_missing("None"), is_missing("NA"), is_missing(" NA"), is_missing("none")
        (True, True, False, False)
    """
    return cell in PANDAS_MISSING


def as_read_back(cell: str) -> str:
    """The answer text VLMEvalKit scores for a prediction cell: ``nan`` for a cell pandas
    reads as missing, else the cell.

    Examples:
        >>> as_read_back("NA"), as_read_back(""), as_read_back("B")
        ('nan', 'nan', 'B')
    """
    return "nan" if cell in PANDAS_MISSING else cell
