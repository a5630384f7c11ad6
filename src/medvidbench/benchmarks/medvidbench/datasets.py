"""The eight source datasets of MedVidBench and their canonical spellings.

Upstream detects a record's dataset with several inconsistent heuristics (video-id shapes,
keywords in the question) and spells the same dataset differently in different modules
("Cholec80-CVS" vs "Cholec80_CVS", "jigsaws" vs "JIGSAWS"). We trust the ground truth's
``data_source`` field only, canonicalise its spelling, and refuse names we do not know.
"""

from __future__ import annotations

import re
from functools import cache

DATASETS: tuple[str, ...] = (
    "AVOS",
    "CholecT50",
    "CholecTrack20",
    "Cholec80_CVS",
    "CoPESD",
    "EgoSurgery",
    "NurViD",
    "JIGSAWS",
)

_FOLD = re.compile(r"[^a-z0-9]")
_BY_FOLDED = {_FOLD.sub("", name.lower()): name for name in DATASETS}


@cache
def canonical_dataset(name: str) -> str | None:
    """Return the canonical spelling of a dataset name, or None when it is not one of the eight.

    Case, spaces, hyphens and underscores are ignored.

    Examples:
        >>> canonical_dataset("Cholec80-CVS")
        'Cholec80_CVS'
        >>> canonical_dataset("jigsaws")
        'JIGSAWS'
        >>> canonical_dataset("Cholec80") is None
        True
    """
    return _BY_FOLDED.get(_FOLD.sub("", name.lower()))
