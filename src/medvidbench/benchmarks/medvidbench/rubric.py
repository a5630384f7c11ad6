"""MedVidBench's caption-judging rubric.

The published leaderboard scores five aspects, each 1-5: R2 medical terminology, R3 anatomy and
instrument detail, R8 specificity, R5 clinical context, R4 action/state accuracy (metrics.md
§4.1). The wording below is ours. Any change to it changes the rubric's version, which is
stored with every judgement, so scores from different prompts are never mixed silently.
"""

from __future__ import annotations

from medvidbench.core.judge.rubric import Aspect, Rubric

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

TASK_TYPES: dict[str, str] = {
    "dense_captioning": "dense video caption of one event",
    "video_summary": "video summary",
    "region_caption": "region caption (what the object in a marked region is doing)",
}

TEMPLATE = """You are an experienced clinician grading a medical video model's {task}.
Compare the PREDICTION with the REFERENCE written by an expert annotator, and grade the
prediction on each aspect below from 1 (worst) to 5 (best). Judge only what the texts say.

REFERENCE:
{reference}

PREDICTION:
{prediction}

{aspects}

Answer with exactly these five lines and nothing else, one whole number from 1 to 5 each:
{format}"""

RUBRIC = Rubric(ASPECTS, TASK_TYPES, TEMPLATE)
ASPECT_CODES: tuple[str, ...] = RUBRIC.codes
PROMPT_VERSION: str = RUBRIC.version
