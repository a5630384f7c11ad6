"""Next-action class lists shipped with the package (facts from the published leaderboard)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any


@cache
def nap_classes() -> dict[str, Any]:
    """The NAP class lists: per dataset, the CoPESD legacy mapping and NurViD per procedure."""
    # Beside this module, read as a file: importlib.resources would import zipfile and its
    # readers on every cold evaluate for a package that is never run from a zip.
    text = (Path(__file__).parent / "data" / "nap_classes.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data
