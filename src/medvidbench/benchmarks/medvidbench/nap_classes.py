"""Next-action class lists shipped with the package (facts from the published leaderboard)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def nap_classes() -> dict[str, Any]:
    """The NAP class lists: per dataset, the CoPESD legacy mapping and NurViD per procedure."""
    text = (
        resources.files("medvidbench.benchmarks.medvidbench")
        .joinpath("data/nap_classes.json")
        .read_text("utf-8")
    )
    data: dict[str, Any] = json.loads(text)
    return data
