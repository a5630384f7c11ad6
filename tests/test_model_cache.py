"""The model's disk cache: used when sound, rebuilt when stale or corrupt, never trusted blindly."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from medvidbench.core import model_cache
from medvidbench.core.embeddings import Embedder
from medvidbench.core.minilm import WEIGHTS_SHA256, model_dir

TEXTS = ["tying the knot", "Prepare medication solution", "retract the gallbladder"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("MEDVIDBENCH_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every file the cache hashes in full."""
    seen: list[Path] = []
    real = model_cache.sha256_file

    def counting(path: Path) -> str:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(model_cache, "sha256_file", counting)
    return seen


def weights_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("model.safetensors", "tokenizer.json"):
        shutil.copy(model_dir() / name, folder / name)
    return folder


def test_the_weights_are_hashed_once_per_file_then_again_when_it_changes(
    cache: Path, hashes: list[Path], tmp_path: Path
) -> None:
    folder = weights_copy(tmp_path)
    weights = folder / "model.safetensors"
    first = Embedder(folder).encode(TEXTS)
    assert weights in hashes
    hashes.clear()
    second = Embedder(folder).encode(TEXTS)
    assert weights not in hashes  # size, mtime and inode unchanged: not hashed again
    assert np.array_equal(first, second)  # the memory-mapped layout gives the same vectors
    os.utime(weights, ns=(1, 1))  # a changed file (here only its time) is hashed again
    Embedder(folder)
    assert weights in hashes


def test_corrupt_prepared_weights_are_rebuilt(
    cache: Path, hashes: list[Path], tmp_path: Path
) -> None:
    folder = weights_copy(tmp_path)
    expected = Embedder(folder).encode(TEXTS)
    (stored,) = cache.glob("minilm-*.bin")
    with stored.open("r+b") as fh:
        fh.seek(1000)
        fh.write(b"\x7f" * 64)
    hashes.clear()
    again = Embedder(folder).encode(TEXTS)
    assert stored in hashes  # changed since recorded: checked, found wrong, rebuilt
    assert np.array_equal(again, expected)
    hashes.clear()
    assert np.array_equal(Embedder(folder).encode(TEXTS), expected)
    assert stored not in hashes  # the rebuilt file was recorded as sound


def test_label_vectors_come_from_the_cache_and_a_corrupt_entry_is_rebuilt(cache: Path) -> None:
    calls: list[int] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.arange(len(texts) * 4, dtype=np.float32).reshape(len(texts), 4)

    first = model_cache.label_vectors(WEIGHTS_SHA256, TEXTS, 4, encode)
    second = model_cache.label_vectors(WEIGHTS_SHA256, TEXTS, 4, encode)
    assert calls == [3] and np.array_equal(first, second)
    (entry,) = cache.glob("labels-*.f32")
    data = bytearray(entry.read_bytes())
    data[5] ^= 0xFF
    entry.write_bytes(bytes(data))
    third = model_cache.label_vectors(WEIGHTS_SHA256, TEXTS, 4, encode)
    assert calls == [3, 3] and np.array_equal(third, first)  # rebuilt, not trusted
    model_cache.label_vectors(WEIGHTS_SHA256, [*TEXTS, "one more"], 4, encode)
    assert calls == [3, 3, 4]  # another label list is another entry
    model_cache.label_vectors("0" * 64, TEXTS, 4, encode)
    assert calls == [3, 3, 4, 3]  # other weights: another entry


def test_an_unwritable_cache_folder_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    monkeypatch.setenv("MEDVIDBENCH_CACHE_DIR", str(blocked / "cache"))
    vectors = Embedder().encode(TEXTS)
    assert vectors.shape == (3, 384)


def test_two_threads_asking_for_the_same_labels_encode_them_once(cache: Path) -> None:
    """A server's warm-up and its first scoring job ask for a benchmark's labels at once: one
    encodes, the other reads its file."""
    import threading
    import time

    calls: list[int] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        time.sleep(0.3)
        return np.ones((len(texts), 4), dtype=np.float32)

    got: list[Any] = []
    threads = [
        threading.Thread(
            target=lambda: got.append(model_cache.label_vectors(WEIGHTS_SHA256, TEXTS, 4, encode))
        )
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [3] and len(got) == 2 and np.array_equal(got[0], got[1])
