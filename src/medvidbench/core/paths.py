"""Where the package keeps its per-machine caches (prepared model weights, plug-in index,
test-set copies), and how a file in them is written."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

_fallback: Path | None = None


def cache_dir() -> Path:
    """``MEDVIDBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/medvidbench/models``, else
    ``~/.cache/medvidbench/models``; without a home directory, a folder of the user's own in
    the temporary folder (:func:`_private_temporary`)."""
    explicit = os.environ.get("MEDVIDBENCH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no home directory (some service accounts)
            base = str(_private_temporary())
    return Path(base) / "medvidbench" / "models"


def _private_temporary() -> Path:
    """``medvidbench-<uid>`` in the temporary folder when it is this user's alone (made so when
    missing); when someone else made it first, or it is a link or open to others, a fresh
    private folder for this process instead: anyone may create names in /tmp, and a cache
    another user can write could hand this one planted label vectors or test-set copies."""
    global _fallback
    import tempfile  # here and below: not imported on every command's path

    shared = Path(tempfile.gettempdir()) / f"medvidbench-{os.getuid()}"
    try:
        shared.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(shared)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
            return shared
    except OSError:
        pass
    if _fallback is None:
        _fallback = Path(tempfile.mkdtemp(prefix="medvidbench-"))
    return _fallback


def write_atomically(path: Path, write: Callable[[Any], None]) -> None:
    """Write through ``write(file)`` into a fresh temporary file beside ``path`` (created
    exclusively, mode 0600: nothing planted at its name is written through), then move it into
    place; a failure leaves no temporary file and ``path`` as it was."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
