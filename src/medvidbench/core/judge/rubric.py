"""The caption-judging rubric and prompt, versioned by content hash.

The published leaderboard scores five aspects, each 1-5: R2 medical terminology, R3 anatomy and
instrument detail, R8 specificity, R5 clinical context, R4 action/state accuracy (metrics.md
§4.1). The wording below is ours. Any change to it changes :data:`PROMPT_VERSION`, which is
stored with every judgement, so scores from different prompts are never mixed silently.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Aspect:
    code: str
    name: str
    question: str
    anchors: tuple[str, str, str, str, str]  # what 1, 2, 3, 4 and 5 mean


ASPECTS: tuple[Aspect, ...] = (
    Aspect(
        "R2",
        "Medical terminology",
        "Does the prediction name things with the correct "
        "clinical vocabulary used in the reference?",
        (
            "wrong or lay terms throughout",
            "mostly imprecise terms",
            "some correct terms, some vague",
            "mostly correct clinical terms",
            "terminology as precise as the reference",
        ),
    ),
    Aspect(
        "R3",
        "Anatomy and instrument detail",
        "Are the instruments, anatomical structures and materials identified as in the reference?",
        (
            "none identified or all wrong",
            "few identified, several wrong",
            "about half identified correctly",
            "most identified correctly",
            "all identified correctly",
        ),
    ),
    Aspect(
        "R8",
        "Specificity and detail",
        "Is the prediction as specific and detailed as the reference, without inventing detail?",
        (
            "generic or empty",
            "little usable detail",
            "some detail, some gaps",
            "nearly the reference's level of detail",
            "the reference's level of detail, nothing invented",
        ),
    ),
    Aspect(
        "R5",
        "Clinical context",
        "Does the prediction place the content in the right procedure, phase or purpose?",
        (
            "wrong or no context",
            "context mostly wrong",
            "partly right context",
            "context right with minor slips",
            "context fully consistent with the reference",
        ),
    ),
    Aspect(
        "R4",
        "Action and state accuracy",
        "Are the actions performed and the states of objects described as in the reference?",
        (
            "actions wrong or missing",
            "most actions wrong",
            "about half the actions right",
            "most actions right",
            "all actions and states right",
        ),
    ),
)
ASPECT_CODES: tuple[str, ...] = tuple(a.code for a in ASPECTS)

TASK_TYPES: dict[str, str] = {
    "dense_captioning": "dense video caption of one event",
    "video_summary": "video summary",
    "region_caption": "region caption (what the object in a marked region is doing)",
}

_TEMPLATE = """You are an experienced clinician grading a medical video model's {task}.
Compare the PREDICTION with the REFERENCE written by an expert annotator, and grade the
prediction on each aspect below from 1 (worst) to 5 (best). Judge only what the texts say.

REFERENCE:
{reference}

PREDICTION:
{prediction}

{aspects}

Answer with exactly these five lines and nothing else, one whole number from 1 to 5 each:
{format}"""


def _aspect_block(a: Aspect) -> str:
    levels = "\n".join(f"  {n}: {text}" for n, text in enumerate(a.anchors, start=1))
    return f"{a.code} {a.name}: {a.question}\n{levels}"


_ASPECTS_TEXT = "\n\n".join(_aspect_block(a) for a in ASPECTS)
_FORMAT_TEXT = "\n".join(f"{code}: <score>" for code in ASPECT_CODES)
PROMPT_VERSION = hashlib.sha256(
    (_TEMPLATE + _ASPECTS_TEXT + repr(sorted(TASK_TYPES.items()))).encode()
).hexdigest()[:12]


def build_prompt(task: str, prediction: str, reference: str) -> str:
    """The single user message sent to the judge for one (prediction, reference) pair.

    Examples:
        >>> "R8 Specificity" in build_prompt("video_summary", "a", "b")
        True
    """
    return _TEMPLATE.format(
        task=TASK_TYPES[task],
        reference=reference,
        prediction=prediction,
        aspects=_ASPECTS_TEXT,
        format=_FORMAT_TEXT,
    )
