"""Benchmark: sentence-embedding throughput, numpy encoder against sentence-transformers + torch.

Encodes the unique next-action answers of the garbage archetype (word salad: every one needs
its embedding) with this package's numpy all-MiniLM-L6-v2, and, when ``torch`` and
``sentence_transformers`` are importable (an optional cross-check: ``pip install
torch==2.13.0 sentence-transformers``; never a requirement), with sentence-transformers on the
same weights and inputs. Prints tokens per second (median of ``--repeat`` runs, each on a fresh
encoder cache) and the largest difference between the two sets of vectors.

Also the text cache's memory (``MEDVIDBENCH_EMBEDDING_CACHE_SIZE`` entries at most): the bytes
an encoder holds after encoding the texts once, per cached text (traced with ``tracemalloc``,
after the weights and tokenizer are loaded), and the mean text length.

Usage: python bench/bench_embed.py [--samples 6245] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=6245)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    import numpy as np

    from medvidbench.core.embeddings import Embedder
    from medvidbench.core.minilm import model_dir
    from serving import synth  # beside this script

    with tempfile.TemporaryDirectory() as tmp:
        synth(Path(tmp), args.samples)
        records = json.loads((Path(tmp) / "predictions_garbage.json").read_text())
    texts = sorted({r["prediction"] for r in records if r["qa_type"] == "next_action"})
    ours = Embedder()
    tokens = sum(len(e.ids) for e in ours.tokenizer.encode_batch(texts))
    runs = []
    for _ in range(args.repeat):
        encoder = Embedder()
        started = time.perf_counter()
        vectors = encoder.encode(texts)
        runs.append(time.perf_counter() - started)
    median = statistics.median(runs)
    print(f"{len(texts)} texts, {tokens:,} tokens (truncated at 256 per text)")
    print(f"numpy encoder:          {median:.3f} s median, {tokens / median:,.0f} tokens/s")
    print(cache_bytes(texts))
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence-transformers + torch: not installed (optional cross-check), skipped")
        return
    model = SentenceTransformer(str(model_dir()), device="cpu")
    theirs = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        with torch.inference_mode():
            reference = model.encode(texts, batch_size=32, normalize_embeddings=True)
        theirs.append(time.perf_counter() - started)
    median_theirs = statistics.median(theirs)
    print(
        f"sentence-transformers {torch.__version__}: {median_theirs:.3f} s median, "
        f"{tokens / median_theirs:,.0f} tokens/s ({torch.get_num_threads()} threads)"
    )
    print(f"largest difference between the vectors: {float(np.abs(vectors - reference).max()):.2e}")


def cache_bytes(texts: list[str]) -> str:
    """Bytes the encoder's text cache holds per entry, measured."""
    import gc
    import tracemalloc

    from medvidbench.core.embeddings import Embedder

    encoder = Embedder(cache_size=len(texts))
    encoder.encode(["load the weights and the tokenizer first"])
    encoder.encode(texts[:1])
    gc.collect()
    tracemalloc.start()
    start, _ = tracemalloc.get_traced_memory()
    encoder.encode(texts[1:])
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n = max(encoder.cache_info()["size"] - 1, 1)
    mean_chars = sum(map(len, texts[1:])) / n
    return (
        f"text cache: {(held - start) / n:,.0f} bytes per entry ({n} entries, texts of "
        f"{mean_chars:.0f} characters on average; the vector itself 1,536)"
    )


if __name__ == "__main__":
    main()
