"""A prepared copy of a test-set file in the cache folder, so that the next command run against
the same file does not parse and check it again.

A researcher scores many prediction files against one test set, and reading MedVidBench's
6,245-question file (5.3 MB of JSON, every record checked) is about a sixth of a cold
``medvidbench evaluate``. The first run stores the loaded test set (msgpack through msgspec:
plain data, never code); a later run reads it back when all of these are as they were:

* the file: the path as given and as resolved (a reader may read a name: ``.jsonl``), its
  device, inode, size, and modification and change times (any write moves the change time,
  which no user can set back), and the size limit it was read under;
* the code: this package's version, and the size and modification time of every ``.py`` file
  of this package and of the package that defines the benchmark's reader (every folder of a
  namespace package; a plug-in that is one module, its file), so an upgrade or an edit
  rebuilds the copy; a reader whose files cannot all be listed (a zipped plug-in) gets no copy;
* the benchmark's slug and version, and :data:`FORMAT`.

The copy carries the sha256 of its contents, checked on every read; a copy that is missing,
stale, corrupt or does not decode is rebuilt. A copy is stored only when it decodes back equal
to the loaded test set, when the file did not change while it was read, and when the file's
last change is more than :data:`RACY_NS` old (on a file system with coarse times, a rewrite
within the same tick would keep every stamp). The copies' folder and every copy must be this
user's own and writable by no one else (otherwise no copy is read or written: another user
could plant one); copies are written under a fresh temporary name and moved into place, and
only the :data:`KEEP` most recently written are kept.

Only the command line's ``validate`` and ``evaluate`` use it, on a benchmark whose test-set
reader declares its class (:attr:`~medvidbench.core.testsets.TestSetFunctions.kept_as`): the
server never copies a hidden test set out of its data folder. ``MEDVIDBENCH_TESTSET_CACHE=0``
turns it off. The copies live in ``testsets/`` inside the folder
:func:`medvidbench.core.paths.cache_dir` names; deleting it loses nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from medvidbench.core.paths import cache_dir, write_atomically
from medvidbench.version import __version__

FORMAT = 2
SWITCH = "MEDVIDBENCH_TESTSET_CACHE"
KEEP = 8  # copies kept: the least recently written beyond these are removed
RACY_NS = 2_000_000_000  # a file changed this recently (ns) gets no copy
_HALF_WRITTEN_NS = 3600 * 1_000_000_000  # a temporary file this old was left by a killed run

_code_stamp: dict[str, str | None] = {}


class _Copy(msgspec.Struct, array_like=True):
    key: str
    sha256: str
    payload: bytes


def load(bench: Any, path: Path, max_bytes: int | None = None) -> Any:
    """``bench``'s test set read from the file ``path`` (under ``max_bytes``, else its reader's
    own limit), from the kept copy when it is current.

    Raises whatever the benchmark's reader raises (the reader reads the file whenever no
    current copy exists, so every problem with the file is reported as without the cache).
    """
    kept_as = getattr(bench.testset, "kept_as", None)
    before = _stat(path)
    if (
        kept_as is None
        or os.environ.get(SWITCH, "1") == "0"
        or before is None
        or not stat.S_ISREG(before.st_mode)
        or (max_bytes is not None and before.st_size > max_bytes)
    ):
        return bench.load_ground_truth(path, max_bytes)  # the reader says what is wrong
    # the name as given (a reader may read it: ".jsonl") and the file it leads to, as bytes
    # (a file's name need not be UTF-8)
    names = [os.fsencode(path), os.fsencode(path.resolve())]
    key = _key(bench, names, before, max_bytes)
    folder = _folder() if key is not None else None
    if key is None or folder is None:
        return bench.load_ground_truth(path, max_bytes)
    kind = kept_as()
    digest = hashlib.sha256(b"\0".join([bench.slug.encode(), *names])).hexdigest()
    entry = folder / f"{digest[:32]}.msgpack"
    kept = _read(entry, key, kind)
    if kept is not None:
        return kept
    test_set = bench.load_ground_truth(path, max_bytes)
    after = _stat(path)
    if after is not None and _file_stamp(after) == _file_stamp(before) and not _racy(after):
        with contextlib.suppress(Exception):  # a copy is only ever a saving: never a failure
            _write(entry, key, test_set, kind)
            _prune(folder)
    return test_set


def _stat(path: Path) -> os.stat_result | None:
    """The file's stat, taken from an open file: opening revalidates a network file system's
    cached attributes (NFS's close-to-open), where a bare ``stat`` may answer from a cache."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def _file_stamp(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _racy(st: os.stat_result) -> bool:
    return time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS


def _own(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else."""
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _folder() -> Path | None:
    """The copies' folder (made private when missing), or None when it is not this user's
    alone. Each copy is checked the same way when read, so a folder someone else swapped in
    holds nothing that is used (a cache folder shared with one's own group may hold it)."""
    folder = cache_dir() / "testsets"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        own = os.lstat(folder)
    except OSError:
        return None
    return folder if stat.S_ISDIR(own.st_mode) and _own(own) else None


def _key(bench: Any, names: list[bytes], st: os.stat_result, max_bytes: int | None) -> str | None:
    """What the copy must have been made from, or None when the reader's code cannot be
    stamped (no copy then)."""
    loader = getattr(bench.testset, "load", None)
    packages = {"medvidbench", getattr(loader, "__module__", "medvidbench").partition(".")[0]}
    code = [_code(package) for package in sorted(packages)]
    if None in code:
        return None
    parts = [FORMAT, __version__, bench.slug, bench.version, max_bytes]
    parts += [*(name.hex() for name in names), *_file_stamp(st), *code]
    return msgspec.json.encode(parts).decode()


def _code(package: str) -> str | None:
    """A digest of the size and modification time of every ``.py`` file of ``package`` (once
    per process), or None when they cannot all be listed."""
    if package not in _code_stamp:
        _code_stamp[package] = _stamp_code(package)
    return _code_stamp[package]


def _stamp_code(package: str) -> str | None:
    module = sys.modules.get(package)
    if module is None:
        return None
    stamps: list[tuple[str, int, int]] = []
    try:
        folders = [Path(p) for p in getattr(module, "__path__", None) or []]
        if not folders and getattr(module, "__file__", None):  # a plug-in of one module
            st = os.stat(str(module.__file__))
            stamps.append((os.fsencode(str(module.__file__)).hex(), st.st_size, st.st_mtime_ns))
        while folders:
            with os.scandir(folders.pop()) as found:
                for e in found:
                    if e.is_dir(follow_symlinks=False) and e.name != "__pycache__":
                        folders.append(Path(e.path))
                    elif e.name.endswith(".py"):
                        st = e.stat()
                        stamps.append((os.fsencode(e.path).hex(), st.st_size, st.st_mtime_ns))
    except OSError:  # a zipped package, an unreadable folder, a broken link
        return None
    if not stamps:
        return None
    return f"{package}:{hashlib.sha256(msgspec.json.encode(sorted(stamps))).hexdigest()}"


def _read(entry: Path, key: str, kind: type[Any]) -> Any:
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not (stat.S_ISREG(st.st_mode) and _own(st)):
                return None
            copy = msgspec.msgpack.decode(fh.read(), type=_Copy)
        if copy.key != key or hashlib.sha256(copy.payload).hexdigest() != copy.sha256:
            return None
        return msgspec.msgpack.decode(copy.payload, type=kind)
    except Exception:  # whatever a copy holds, or a plug-in's class raises: read the file
        return None


def _write(entry: Path, key: str, test_set: Any, kind: type[Any]) -> None:
    payload = msgspec.msgpack.encode(test_set)
    if msgspec.msgpack.decode(payload, type=kind) != test_set:
        return  # the class does not round-trip (state kept outside its fields): keep nothing
    body = msgspec.msgpack.encode(_Copy(key, hashlib.sha256(payload).hexdigest(), payload))
    write_atomically(entry, lambda fh: fh.write(body))


def _prune(folder: Path) -> None:
    """Keep the :data:`KEEP` copies written last; remove temporary files a killed run left."""
    copies, now = [], time.time_ns()
    for e in os.scandir(folder):
        with contextlib.suppress(OSError):
            written = e.stat(follow_symlinks=False).st_mtime_ns
            if e.name.endswith(".msgpack"):
                copies.append((written, e.path))
            elif e.name.endswith(".tmp") and now - written > _HALF_WRITTEN_NS:
                os.unlink(e.path)
    for _, old in sorted(copies, reverse=True)[KEEP:]:
        with contextlib.suppress(OSError):
            os.unlink(old)
