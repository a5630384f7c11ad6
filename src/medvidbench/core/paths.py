"""Where the package keeps its per-machine caches (prepared model weights, plug-in index)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    explicit = os.environ.get("MEDVIDBENCH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no home directory (some service accounts)
            base = str(Path(tempfile.gettempdir()) / f"medvidbench-{os.getuid()}")
    return Path(base) / "medvidbench" / "models"
