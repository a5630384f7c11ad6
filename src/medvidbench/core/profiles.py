"""Metric profiles and the benchmark's metric table, declared once and read everywhere.

A profile is a named, versioned set of parsing and scoring rules. ``leaderboard-v1`` reproduces
the published leaderboard's numbers, quirks included; ``strict-v2`` holds our corrected
definitions. Changing a rule means a new profile version, never a silent change: every report
records the profile and the scorer version that produced it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from medvidbench.core.errors import UsageError

Scale = Literal["0-1", "1-5", "percent"]
_SCALE_RANGE: dict[str, tuple[float, float]] = {
    "0-1": (0.0, 1.0),
    "1-5": (1.0, 5.0),
    "percent": (0.0, 100.0),
}


@dataclass(frozen=True, slots=True)
class Metric:
    """One leaderboard column; ranking, pages, charts, exports and the API all read it here.

    Attributes:
        key: Stable machine key (``tag_miou_03``), used in reports, the API and CSV headers.
        column: The leaderboard's column title (``TAG_mIoU@0.3``).
        task: The task that produces it.
        title: A short human description.
        scale: ``0-1``, ``1-5`` (LLM-judged) or ``percent``.
        judged: Whether an LLM judge produces it (null until judged).
        higher_is_better: Ranking direction.
        ranked: Whether it enters the average rank (a shown-only column does not).
    """

    key: str
    column: str
    task: str
    title: str
    scale: Scale = "0-1"
    judged: bool = False
    higher_is_better: bool = True
    ranked: bool = True

    @property
    def bounds(self) -> tuple[float, float]:
        """The lowest and highest value the scale allows."""
        return _SCALE_RANGE[self.scale]

    def normalised(self, value: float | None) -> float | None:
        """The value on 0-1 with 1 the best, for averages and charts across scales.

        Examples:
            >>> Metric("x", "X", "t", "", "1-5").normalised(3.0)
            0.5
            >>> Metric("e", "E", "t", "", higher_is_better=False).normalised(0.25)
            0.75
        """
        if value is None:
            return None
        low, high = self.bounds
        unit = (float(value) - low) / (high - low)
        return unit if self.higher_is_better else 1.0 - unit


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
METRICS_BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}


@dataclass(frozen=True, slots=True)
class Profile:
    """A named, versioned set of parsing and scoring rules.

    Attributes:
        name: ``leaderboard-v1`` or ``strict-v2``.
        strict: Whether the corrected definitions apply (tolerant parsing, every sample counts).
        description: One sentence for reports and the About page.
    """

    name: str
    strict: bool
    description: str


LEADERBOARD_V1 = Profile(
    "leaderboard-v1",
    strict=False,
    description="Reproduces the published MedVidBench leaderboard's numbers, quirks included.",
)
STRICT_V2 = Profile(
    "strict-v2",
    strict=True,
    description="Corrected definitions: tolerant parsing, every sample counts, unparseable "
    "answers score 0, no frame truncation.",
)
PROFILES: dict[str, Profile] = {p.name: p for p in (LEADERBOARD_V1, STRICT_V2)}
DEFAULT_PROFILE = LEADERBOARD_V1.name

# Bumped whenever any rule of any profile changes what a score is.
SCORER_VERSION = "1.1.0"


def get_profile(name: str) -> Profile:
    """Look a profile up by name.

    Raises:
        UsageError: for an unknown name, listing the known ones.
    """
    try:
        return PROFILES[name]
    except KeyError:
        raise UsageError(
            f"unknown profile {name!r}; expected one of {', '.join(PROFILES)}"
        ) from None
