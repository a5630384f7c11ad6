"""The all-MiniLM-L6-v2 forward pass on numpy, without torch.

A 6-layer BERT (hidden 384, 12 heads, exact-erf GELU, LayerNorm eps 1e-12), mean pooling over
the attention mask, then L2 normalisation, exactly as sentence-transformers' three modules do.
Imported only when a text must be encoded (:class:`medvidbench.core.embeddings.Embedder`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from medvidbench.core.minilm import HEADS, HIDDEN, LAYERS, LN_EPS

FF_ROWS = 64  # rows per feed-forward block: 64 x 1536 float32 (384 KB) fits in L2
Array = NDArray[Any]  # float32 throughout; numpy stubs cannot follow dtypes through ops


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


def prepare(raw: dict[str, NDArray[np.generic]]) -> dict[str, Array]:
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


def load_prepared(path: Path) -> dict[str, Array]:
    from safetensors.numpy import load_file

    return prepare(load_file(str(path)))


def forward(w: dict[str, Array], batch: list[list[int]]) -> Array:
    """Unit-length embeddings of a batch of token id lists (one row each)."""
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
        x = _layer(w, x, bias, f"encoder.layer.{layer}.")
    pooled = (x * mask[:, :, None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: Array = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
    return unit


def _layer(w: dict[str, Array], x: Array, bias: Array, p: str) -> Array:
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
        ctx @ w[p + "attention.output.dense.weight"] + w[p + "attention.output.dense.bias"] + flat,
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
