"""Task metadata and qa_type routing, declared once and read everywhere.

Upstream routes records to tasks with a mix of substring tests ("dc" anywhere in the qa_type
means dense captioning) and exact comparisons (metrics.md §2.2, bug B10). We route explicitly:
a qa_type belongs to a task when it equals the task's name or is the name followed by an
underscore and a variant suffix (``dense_captioning_gpt``). Anything else is unknown.
"""

from __future__ import annotations

import re
from functools import cache

import msgspec


class TaskInfo(msgspec.Struct, frozen=True):
    """What the rest of the system needs to know about one task.

    Attributes:
        name: The task key, equal to the qa_type or its prefix (``dense_captioning``).
        label: Short display name used on the leaderboard.
        title: Human-readable title.
        variants: The qa_type strings of the published test set for this task.
        test_count: Number of samples of this task in the published 6,245-sample test set.
        family: Its capability family across benchmarks (core.benchmark.FAMILIES).
        answer_chars: The longest answer its format ever needs (None: the global limit).
            The published answers are 10-250 characters (TAL, NAP, SA, CVS), a few hundred
            (STG's boxes, DVC's events); the caps leave room for a verbose model, a long clip
            and dozens of events, and a judged caption keeps the global limit.
    """

    name: str
    label: str
    title: str
    variants: tuple[str, ...]
    test_count: int
    answer_chars: int | None = None
    family: str = ""


TASKS: dict[str, TaskInfo] = {
    t.name: t
    for t in (
        TaskInfo(
            "tal",
            "TAG",
            "Temporal action localisation",
            ("tal",),
            1637,
            1_000,
            "temporal-localisation",
        ),
        TaskInfo(
            "stg", "STG", "Spatiotemporal grounding", ("stg",), 780, 4_000, "spatial-grounding"
        ),
        TaskInfo(
            "next_action",
            "NAP",
            "Next action prediction",
            ("next_action",),
            670,
            1_000,
            "classification",
        ),
        TaskInfo(
            "dense_captioning",
            "DVC",
            "Dense video captioning",
            ("dense_captioning_gpt", "dense_captioning_gemini"),
            751 + 728,
            4_000,
            "captioning",
        ),
        TaskInfo(
            "video_summary",
            "VS",
            "Video summary",
            ("video_summary_gpt", "video_summary_gemini"),
            263 + 302,
            family="captioning",
        ),
        TaskInfo(
            "region_caption",
            "RC",
            "Region caption",
            ("region_caption_gpt", "region_caption_gemini"),
            138 + 168,
            family="captioning",
        ),
        TaskInfo(
            "skill_assessment",
            "SA",
            "Skill assessment",
            ("skill_assessment",),
            160,
            1_000,
            "assessment",
        ),
        TaskInfo(
            "cvs_assessment",
            "CVS",
            "Critical view of safety",
            ("cvs_assessment",),
            648,
            1_000,
            "assessment",
        ),
    )
}

# Published test-set counts per qa_type variant (dataset card), used by the synthetic generator.
VARIANT_TEST_COUNTS: dict[str, int] = {
    "tal": 1637,
    "stg": 780,
    "next_action": 670,
    "dense_captioning_gpt": 751,
    "dense_captioning_gemini": 728,
    "video_summary_gpt": 263,
    "video_summary_gemini": 302,
    "region_caption_gpt": 138,
    "region_caption_gemini": 168,
    "skill_assessment": 160,
    "cvs_assessment": 648,
}

_SUFFIX = re.compile(r"[A-Za-z0-9.-]+")


@cache
def task_for_qa_type(qa_type: str) -> str | None:
    """Return the task a qa_type belongs to, or None when it is not a MedVidBench qa_type.

    Examples:
        >>> task_for_qa_type("dense_captioning_gpt")
        'dense_captioning'
        >>> task_for_qa_type("tal")
        'tal'
        >>> task_for_qa_type("dc") is None
        True
    """
    if qa_type in TASKS:
        return qa_type
    for name in TASKS:
        if qa_type.startswith(name + "_") and _SUFFIX.fullmatch(qa_type[len(name) + 1 :]):
            return name
    return None
