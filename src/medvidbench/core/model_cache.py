"""A disk cache for the sentence-embedding model: verified weights, ready-laid-out arrays, and the
embeddings of fixed label lists, so that a fresh process does not redo any of them.

Nothing read from the cache is trusted as it is:

* the installed weights are hashed (sha256) once per file; the result is recorded against the
  file's path, size and modification time, and hashed again whenever any of those changes;
* the re-laid-out weights are one file whose own sha256 is recorded beside it; it is checked the
  same way (once per size and modification time) and rebuilt when the check fails;
* the embeddings of a label list are stored under a key made of the weights' hash, the labels
  and :data:`FORWARD_VERSION`, with their sha256, and are hashed on every load (they are small).

Anything missing, stale or corrupt is rebuilt; a cache folder that cannot be written is simply
not used. The folder is ``MEDVIDBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/medvidbench``, else
``~/.cache/medvidbench``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medvidbench.core.paths import cache_dir, write_atomically

if TYPE_CHECKING:
    from numpy.typing import NDArray

# Bump whenever the forward pass changes what it computes: cached embeddings then rebuild.
FORWARD_VERSION = "2"
_CHUNK = 1 << 22


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _verified() -> dict[str, Any]:
    try:
        seen = json.loads((cache_dir() / "verified.json").read_text())
    except (OSError, ValueError):
        return {}
    return seen if isinstance(seen, dict) else {}


def _record_verified(path: Path, sha256: str) -> None:
    """Remember that ``path``, as it is now, hashes to ``sha256``."""
    seen = {k: v for k, v in _verified().items() if Path(k).exists()}
    seen[str(path.resolve())] = {"stamp": _stamp(path), "sha256": sha256}
    with contextlib.suppress(OSError):  # an unwritable cache only costs the hash next time
        write_atomically(
            cache_dir() / "verified.json", lambda fh: fh.write(json.dumps(seen).encode())
        )


def file_has_hash(path: Path, expected: str) -> bool:
    """Whether ``path`` hashes to ``expected``, hashing it only when it changed since the last
    successful check (recorded by path, size, modification time and inode)."""
    if _verified().get(str(path.resolve())) == {"stamp": _stamp(path), "sha256": expected}:
        return True
    if sha256_file(path) != expected:
        return False
    _record_verified(path, expected)
    return True


def prepared_weights(
    weights_sha256: str, build: Callable[[], dict[str, NDArray[Any]]]
) -> dict[str, NDArray[Any]]:
    """The model's arrays, laid out for the forward pass, memory-mapped from the cache.

    ``build()`` makes them (from the verified installed weights) when the cache has none that
    pass their check; they are then stored for the next process.
    """
    import numpy as np

    folder = cache_dir()
    name = f"minilm-{weights_sha256[:16]}-v{FORWARD_VERSION}"
    data, index = folder / f"{name}.bin", folder / f"{name}.json"
    try:
        meta = json.loads(index.read_text())
        if file_has_hash(data, meta["sha256"]):
            return _views(np.memmap(data, dtype=np.float32, mode="r"), meta["arrays"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    arrays = build()
    with contextlib.suppress(OSError):
        _store(arrays, data, index)
    return arrays


def _views(flat: NDArray[Any], layout: list[list[Any]]) -> dict[str, NDArray[Any]]:
    import numpy as np

    out: dict[str, NDArray[Any]] = {}
    for name, offset, shape in layout:
        size = int(np.prod(shape)) if shape else 1
        out[name] = flat[offset : offset + size].reshape(shape)
    return out


def _store(arrays: dict[str, NDArray[Any]], data: Path, index: Path) -> None:
    import numpy as np

    layout, offset = [], 0
    for name, value in arrays.items():
        layout.append([name, offset, list(value.shape)])
        offset += value.size
    digest = hashlib.sha256()

    def write(fh: Any) -> None:
        for value in arrays.values():
            raw = np.ascontiguousarray(value, dtype=np.float32).tobytes()
            digest.update(raw)
            fh.write(raw)

    write_atomically(data, write)
    sha256 = digest.hexdigest()
    meta = {"sha256": sha256, "arrays": layout}
    write_atomically(index, lambda fh: fh.write(json.dumps(meta).encode()))
    _record_verified(data, sha256)  # hashed while written: no need to read it back


def label_vectors(
    weights_sha256: str,
    labels: Sequence[str],
    dim: int,
    encode: Callable[[Sequence[str]], NDArray[Any]],
) -> list[memoryview[float]]:
    """Embeddings of a fixed label list, one float32 row (a memoryview of format ``f``) per
    label: from the cache when a verified copy exists (read without numpy), else
    ``encode(labels)``, stored for the next process."""
    key = hashlib.sha256(
        json.dumps([weights_sha256, FORWARD_VERSION, list(labels)]).encode()
    ).hexdigest()
    path = cache_dir() / f"labels-{key[:32]}.f32"  # float32 rows, then their sha256 in hex
    found = _cached_rows(path, len(labels), dim)
    if found is not None:
        return found
    # one thread computes, the others wait and read its file (a server's warm-up and its first
    # scoring job used to encode the same labels at once)
    with _ENCODING:
        found = _cached_rows(path, len(labels), dim)
        if found is not None:
            return found
        import numpy as np

        body = np.ascontiguousarray(encode(labels), dtype=np.float32).tobytes()
        with contextlib.suppress(OSError):
            write_atomically(
                path, lambda fh: fh.write(body + hashlib.sha256(body).hexdigest().encode())
            )
    return _rows(body, dim)


_ENCODING = threading.Lock()


def _cached_rows(path: Path, count: int, dim: int) -> list[memoryview[float]] | None:
    """The rows of a verified cache file, or None."""
    try:
        raw = path.read_bytes()
        stored, digest = raw[:-64], raw[-64:].decode("ascii")
        if hashlib.sha256(stored).hexdigest() == digest and len(stored) == count * dim * 4:
            return _rows(stored, dim)
    except (OSError, ValueError, UnicodeDecodeError):
        pass
    return None


def _rows(body: bytes, dim: int) -> list[memoryview[float]]:
    flat = memoryview(body).cast("f")  # the machine's own float32, as the file was written
    return [flat[start : start + dim] for start in range(0, len(flat), dim)]
