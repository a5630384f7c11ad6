"""The hosted benchmarks: every :class:`~medvidbench.core.benchmark.Benchmark` published
through the ``medvidbench.benchmarks`` entry-point group, MedVidBench included.

A package adds a benchmark by declaring, in its ``pyproject.toml``::

    [project.entry-points."medvidbench.benchmarks"]
    myslug = "mypackage.benchmark:BENCHMARK"

Discovery reads every installed distribution's metadata, which costs more than a cold
evaluation's whole import time, so the result (slug -> ``module:attribute``) is cached under
the cache directory, keyed by the ``sys.path`` entries and, in each, every ``*.dist-info`` or
``*.egg-info`` folder's name (which holds the version) with its ``entry_points.txt``'s
modification time. Installing, upgrading, reinstalling or removing a distribution, or a change
to ``sys.path``, changes the key; editing files in a folder that holds no distribution (the
working directory, say) does not. ``MEDVIDBENCH_PLUGIN_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medvidbench.core.errors import UsageError
from medvidbench.core.paths import cache_dir, write_atomically

if TYPE_CHECKING:
    from medvidbench.core.benchmark import Benchmark

GROUP = "medvidbench.benchmarks"
_METADATA = (".dist-info", ".egg-info")
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
_found: dict[str, str] | None = None
_loaded: dict[str, Benchmark] = {}


def _fingerprint() -> list[list[object]]:
    """The distributions on ``sys.path``: per entry, each metadata folder's name and the
    modification time of its ``entry_points.txt`` (None when it has none). A folder with no
    metadata folder publishes nothing and is left out, so the script's own folder (``python
    -m medvidbench`` and the ``medvidbench`` script differ there) does not change the key."""
    out: list[list[object]] = []
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as found:
                names = sorted(d.name for d in found if d.name.endswith(_METADATA))
        except OSError:  # not a folder (a zip file) or gone: its path alone
            out.append([entry])
            continue
        if not names:
            continue
        stamps: list[object] = [entry]
        for name in names:
            try:
                stamp = os.stat(os.path.join(entry or ".", name, "entry_points.txt")).st_mtime_ns
            except OSError:
                stamp = None
            stamps.append([name, stamp])
        out.append(stamps)
    return out


def _scan() -> dict[str, str]:
    from importlib.metadata import entry_points

    found: dict[str, str] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep.value)  # the first on sys.path wins, as imports do
    return found


def _index_path() -> Path:
    """In the cache folder itself (it was written beside it: with ``MEDVIDBENCH_CACHE_DIR`` set
    to ``/tmp/mine``, in /tmp, where anyone may create it first)."""
    return cache_dir() / "benchmarks.json"


def _read_index(path: Path) -> Any:
    """The index file's contents, or None when it is not this user's alone (another user could
    plant one naming which installed module each benchmark's slug loads)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None
        return json.loads(fh.read())


def discovered() -> dict[str, str]:
    """Every published benchmark's slug and ``module:attribute``, sorted by slug."""
    global _found
    if _found is not None:
        return _found
    use_cache = os.environ.get("MEDVIDBENCH_PLUGIN_CACHE", "1") != "0"
    key = _fingerprint()
    path = _index_path()
    if use_cache:
        try:
            cached = _read_index(path)
            if cached is not None and cached.get("key") == key:
                _found = dict(cached["benchmarks"])
                return _found
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
    _found = dict(sorted(_scan().items()))
    if use_cache:
        try:
            body = json.dumps({"key": key, "benchmarks": _found}).encode()
            write_atomically(path, lambda fh: fh.write(body))  # mode 0600: this user's alone
        except OSError:
            pass  # a read-only home: discovery just runs again next time
    return _found


def forget() -> None:
    """Drop what this process discovered and loaded (after installing a plug-in at run time)."""
    global _found
    _found = None
    _loaded.clear()


def slugs() -> list[str]:
    return list(discovered())


def default_slug() -> str:
    """``MEDVIDBENCH_BENCHMARK`` when set, else the only benchmark, else ``medvidbench``."""
    configured = os.environ.get("MEDVIDBENCH_BENCHMARK", "").strip()
    if configured:
        return configured
    found = discovered()
    return next(iter(found)) if len(found) == 1 else "medvidbench"


def get(slug: str | None = None) -> Benchmark:
    """The benchmark published under ``slug`` (None: :func:`default_slug`).

    Raises:
        UsageError: for a slug no installed package publishes, listing the known ones.
    """
    from medvidbench.core.benchmark import Benchmark

    slug = slug or default_slug()
    if slug in _loaded:
        return _loaded[slug]
    if not SLUG.fullmatch(slug):
        raise UsageError(
            f"{slug[:60]!r} is not a benchmark slug (lowercase letters, digits and hyphens)"
        )
    target = discovered().get(slug)
    if target is None:
        known = ", ".join(discovered()) or "none"
        raise UsageError(f"unknown benchmark {slug!r}; installed benchmarks: {known}")
    module, _, attr = target.partition(":")
    found = import_module(module)
    for part in attr.split(".") if attr else ():
        found = getattr(found, part)
    if callable(found) and not isinstance(found, Benchmark):
        found = found()
    if not isinstance(found, Benchmark):
        raise UsageError(f"entry point {slug!r} ({target}) is not a medvidbench Benchmark")
    if found.slug != slug:
        raise UsageError(f"entry point {slug!r} ({target}) defines benchmark {found.slug!r}")
    _loaded[slug] = found
    return found
