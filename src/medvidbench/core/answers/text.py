"""Short-answer text metrics: SQuAD's normalisation, exact match and token F1, each the best
over a question's reference answers.

The definitions are the SQuAD v2.0 evaluation's (Rajpurkar et al.; the same normalisation as
v1.1 and as torchmetrics' functional ``squad``): lower case, punctuation removed, the articles
"a", "an" and "the" removed as whole words, whitespace collapsed. Token F1 is the harmonic mean
of the precision and recall of the normalised tokens shared by answer and reference (counted
with their multiplicity); when either has no token, it is 1 if both have none, else 0 (v2.0's
rule: v1.1 gave 0 to an empty reference matched by an empty answer). Written here from those
definitions, not copied.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation of an answer.

    Examples:
        >>> normalize_answer("The  Left Atrium!")
        'left atrium'
        >>> normalize_answer("an anastomosis, then a stent")
        'anastomosis then stent'
    """
    lowered = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", lowered).split())


def exact_match(answer: str, references: Sequence[str]) -> float:
    """1.0 when the normalised answer equals a normalised reference, else 0.0.

    Examples:
        >>> exact_match("The aorta.", ["aorta", "ascending aorta"])
        1.0
        >>> exact_match("aorta", [])
        0.0
    """
    mine = normalize_answer(answer)
    return float(any(mine == normalize_answer(r) for r in references))


def _f1(answer_tokens: list[str], reference_tokens: list[str]) -> float:
    if not answer_tokens or not reference_tokens:
        return float(answer_tokens == reference_tokens)
    shared = sum((Counter(answer_tokens) & Counter(reference_tokens)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(answer_tokens)
    recall = shared / len(reference_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(answer: str, references: Sequence[str]) -> float:
    """The best token F1 of the answer against any reference (0.0 with none).

    Examples:
        >>> round(token_f1("the left coronary artery", ["left main coronary artery"]), 4)
        0.8571
        >>> token_f1("", [""])
        1.0
    """
    mine = normalize_answer(answer).split()
    return max((_f1(mine, normalize_answer(r).split()) for r in references), default=0.0)
