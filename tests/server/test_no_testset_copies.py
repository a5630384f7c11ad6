"""The server never keeps a copy of a test set outside its data folder: loading a hidden test
set and scoring a submission leave the cache folder without a ``testsets/`` (the command
line's copies hold a test set's answers; the import contract in pyproject.toml keeps every
server path from the module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medvidbench.server.services.submission_reads import get_submission
from medvidbench.server.services.submissions import submit
from tests.server.conftest import build_runtime, make_user


def test_loading_and_scoring_keep_no_copy(
    tmp_path: Path, synthetic: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("MEDVIDBENCH_CACHE_DIR", str(cache))
    runtime = build_runtime(tmp_path, None, synthetic["ground_truth"])
    try:
        alice = make_user(runtime)
        sub = submit(runtime, alice, synthetic["strong"].read_bytes(), "StrongNet")
        assert get_submission(runtime, sub.id, alice).status == "scored"
    finally:
        runtime.engine.dispose()
    assert not (cache / "testsets").exists()
    assert not list(cache.rglob("*.msgpack"))
