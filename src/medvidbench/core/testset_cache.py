"""A prepared copy of a test-set file in the cache folder, so that the next command run against
the same file does not parse and check it again.

A researcher scores many prediction files against one test set, and reading MedVidBench's
6,245-question file (5.3 MB of JSON, every record checked) is about a sixth of a cold
``medvidbench evaluate``. The first run stores the loaded test set (msgpack through msgspec:
plain data, never code); a later run reads it back when all of these are as they were:

* the file: its resolved path, device, inode, size, and modification and change times (any write
  moves the change time, which no user can set back);
* the code: the size and modification time of every ``.py`` file of this package and of the
  package that defines the benchmark's loader, so an upgrade or an edit rebuilds the copy;
* the benchmark's slug and version, and :data:`FORMAT`.

The copy carries the sha256 of its contents, checked on every read. A copy that is missing,
stale, corrupt or does not decode is rebuilt; a folder that cannot be written is not used. A
copy is stored only when it decodes back equal to the loaded test set, and only when the file
did not change while it was read.

Only the command line's ``validate`` and ``evaluate`` use it, on a benchmark whose test-set
reader declares its class (:attr:`~medvidbench.core.benchmark.TestSetFunctions.kept_as`): the
server never copies a hidden test set out of its data folder. ``MEDVIDBENCH_TESTSET_CACHE=0``
turns it off. The copies live in ``testsets/`` of the cache folder
(:func:`medvidbench.core.paths.cache_dir`), one per test-set file; deleting it loses nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
from pathlib import Path
from typing import Any

import msgspec

from medvidbench.core.paths import cache_dir

FORMAT = 1
SWITCH = "MEDVIDBENCH_TESTSET_CACHE"

_code_stamp: dict[str, str] = {}


class _Copy(msgspec.Struct, array_like=True):
    key: str
    sha256: str
    payload: bytes


def load(bench: Any, path: Path, max_bytes: int) -> Any:
    """``bench``'s test set read from the file ``path``, from the kept copy when it is current.

    Raises whatever the benchmark's reader raises (the reader reads the file whenever no
    current copy exists, so every problem with the file is reported as without the cache).
    """
    kept_as = getattr(bench.testset, "kept_as", None)
    before = _stat(path)
    if kept_as is None or os.environ.get(SWITCH, "1") == "0" or before is None:
        return bench.load_ground_truth(path, max_bytes)
    if not stat.S_ISREG(before.st_mode) or before.st_size > max_bytes:
        return bench.load_ground_truth(path, max_bytes)  # the reader says what is wrong
    kind = kept_as()
    resolved = path.resolve()
    key = _key(bench, resolved, before)
    entry = _entry(bench, resolved)
    kept = _read(entry, key, kind)
    if kept is not None:
        return kept
    test_set = bench.load_ground_truth(path, max_bytes)
    after = _stat(path)
    if after is not None and _file_stamp(after) == _file_stamp(before):
        with contextlib.suppress(OSError, msgspec.MsgspecError, TypeError, ValueError):
            _write(entry, key, test_set, kind)
    return test_set


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _file_stamp(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _entry(bench: Any, resolved: Path) -> Path:
    """One copy per benchmark and file: a file that changes replaces its own copy."""
    name = hashlib.sha256(f"{bench.slug}\0{resolved}".encode()).hexdigest()[:32]
    return cache_dir() / "testsets" / f"{name}.msgpack"


def _key(bench: Any, resolved: Path, st: os.stat_result) -> str:
    parts = [FORMAT, bench.slug, bench.version, str(resolved), *_file_stamp(st)]
    loader = getattr(bench.testset, "load", None)
    packages = {"medvidbench", getattr(loader, "__module__", "medvidbench").partition(".")[0]}
    parts += [_code(package) for package in sorted(packages)]
    return msgspec.json.encode(parts).decode()


def _code(package: str) -> str:
    """A digest of the size and modification time of every ``.py`` file of ``package``."""
    if package not in _code_stamp:
        module = sys.modules.get(package)
        root = Path(module.__file__).parent if module and module.__file__ else None
        stamps: list[tuple[str, int, int]] = []
        folders = [root] if root else []
        while folders:
            with os.scandir(folders.pop()) as found:
                for e in found:
                    if e.is_dir(follow_symlinks=False) and e.name != "__pycache__":
                        folders.append(Path(e.path))
                    elif e.name.endswith(".py"):
                        st = e.stat()
                        stamps.append((e.path, st.st_size, st.st_mtime_ns))
        digest = hashlib.sha256(msgspec.json.encode(sorted(stamps)))
        _code_stamp[package] = f"{package}:{digest.hexdigest()}"
    return _code_stamp[package]


def _read(entry: Path, key: str, kind: type[Any]) -> Any:
    try:
        copy = msgspec.msgpack.decode(entry.read_bytes(), type=_Copy)
        if copy.key != key or hashlib.sha256(copy.payload).hexdigest() != copy.sha256:
            return None
        return msgspec.msgpack.decode(copy.payload, type=kind)
    except (OSError, msgspec.MsgspecError, TypeError, ValueError):
        return None


def _write(entry: Path, key: str, test_set: Any, kind: type[Any]) -> None:
    payload = msgspec.msgpack.encode(test_set)
    if msgspec.msgpack.decode(payload, type=kind) != test_set:
        return  # the class does not round-trip (state kept outside its fields): keep nothing
    body = msgspec.msgpack.encode(_Copy(key, hashlib.sha256(payload).hexdigest(), payload))
    entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(body)
        os.replace(tmp, entry)
    finally:
        tmp.unlink(missing_ok=True)
