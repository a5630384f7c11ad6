"""MedVidBench's metric table and profiles, declared once and read everywhere through the
benchmark definition.

``leaderboard-v1`` reproduces the published leaderboard's numbers, quirks included;
``strict-v2`` holds our corrected definitions.
"""

from __future__ import annotations

from medvidbench.benchmarks.medvidbench.rules import EXTRACTION, SCORING
from medvidbench.core.benchmark import Metric, Profile

METRICS: tuple[Metric, ...] = (
    Metric(
        "cvs_acc",
        "CVS_acc",
        "cvs_assessment",
        "Critical-view-of-safety component-balanced accuracy",
    ),
    Metric("nap_acc", "NAP_acc", "next_action", "Next-action prediction accuracy (pooled)"),
    Metric("sa_acc", "SA_acc", "skill_assessment", "Skill-assessment aspect-balanced accuracy"),
    Metric("stg_miou", "STG_mIoU", "stg", "Spatiotemporal grounding mean box IoU"),
    Metric(
        "tag_miou_03",
        "TAG_mIoU@0.3",
        "tal",
        "Temporal action localisation mean IoU of segments matched at IoU >= 0.3",
    ),
    Metric(
        "tag_miou_05",
        "TAG_mIoU@0.5",
        "tal",
        "Temporal action localisation mean IoU of segments matched at IoU >= 0.5",
    ),
    Metric(
        "dvc_f1", "DVC_F1", "dense_captioning", "Dense captioning temporal F1 over tIoU 0.3/0.5/0.7"
    ),
    Metric(
        "dvc_llm",
        "DVC_llm",
        "dense_captioning",
        "Dense captioning caption quality, LLM-judged",
        "1-5",
        judged=True,
    ),
    Metric(
        "vs_llm", "VS_llm", "video_summary", "Video summary quality, LLM-judged", "1-5", judged=True
    ),
    Metric(
        "rc_llm",
        "RC_llm",
        "region_caption",
        "Region caption quality, LLM-judged",
        "1-5",
        judged=True,
    ),
)
METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS)


LEADERBOARD_V1 = Profile(
    "leaderboard-v1",
    description="Reproduces the published MedVidBench leaderboard's numbers, quirks included.",
    variants=((EXTRACTION.name, "published"), (SCORING.name, "published")),
)
STRICT_V2 = Profile(
    "strict-v2",
    description="Corrected definitions: tolerant parsing, every sample counts, unparseable "
    "answers score 0, no frame truncation.",
    variants=((EXTRACTION.name, "tolerant"), (SCORING.name, "corrected")),
)

# Bumped whenever any rule of any profile changes what a score is.
SCORER_VERSION = "1.2.0"
