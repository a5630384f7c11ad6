"""MedVidBench's named scoring rules: what its two profiles choose between.

``leaderboard-v1`` picks ``published`` for both rules (the published leaderboard's numbers,
quirks included); ``strict-v2`` picks ``tolerant`` extraction and ``corrected`` scoring. A task
asks which variant applies with :func:`tolerant` and :func:`corrected`, never with a yes/no flag
of the profile.
"""

from __future__ import annotations

from medvidbench.core.benchmark import Profile, Rule

EXTRACTION = Rule(
    "extraction",
    ("published", "tolerant"),
    "How an answer is read. published: the upstream parsers exactly; tolerant: also en-dashes, "
    "spaced hyphens, bullets, singular and abbreviated time units, any letter case.",
)
SCORING = Rule(
    "scoring",
    ("published", "corrected"),
    "How a read answer is scored. published: the upstream skip rules, greedy TAL matching, DVC "
    "frame truncation, dataset-weighted DVC means; corrected: every sample counts (unparseable "
    "= 0), optimal one-to-one matching, no truncation, DVC_llm penalises missed and "
    "hallucinated events.",
)
RULES = (EXTRACTION, SCORING)


def tolerant(profile: Profile) -> bool:
    """Whether the profile reads answers with the tolerant extraction."""
    return profile.variant(EXTRACTION.name) == "tolerant"


def corrected(profile: Profile) -> bool:
    """Whether the profile scores with the corrected rules."""
    return profile.variant(SCORING.name) == "corrected"
