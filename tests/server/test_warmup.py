"""A server's warm-up: what the first score step would otherwise wait for, loaded at start; a
hosted benchmark without a test set is one log line, not a stop."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from medvidbench.core import statistics
from medvidbench.server.services import steps
from medvidbench.server.services.submissions import submit
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.services.warmup import warm_up
from tests.server.conftest import build_runtime, make_user


class Held:
    """A queue that keeps what it is given, so that the test runs the score step itself."""

    def __init__(self) -> None:
        self.ids: list[int] = []

    def enqueue_score(self, submission_id: int) -> None:
        self.ids.append(submission_id)


def test_the_first_score_step_after_the_warm_up_draws_no_bootstrap(
    tmp_path: Path, synthetic: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An odd replicate count: no other test of this process has drawn these counts.
    runtime = build_runtime(tmp_path, None, synthetic["ground_truth"], bootstrap_replicates=137)
    held = Held()
    monkeypatch.setattr(runtime, "queue", held)
    user = make_user(runtime)
    warm_up(runtime)
    drawn = statistics._drawn_counts.cache_info().misses
    sub = submit(runtime, user, synthetic["strong"].read_bytes(), "first after start")
    assert steps.run_step(runtime, held.ids[0], "score", "w1") == "done"
    assert held.ids == [sub.id]
    assert statistics._drawn_counts.cache_info().misses == drawn  # the warm-up's, reused
    runtime.engine.dispose()


def test_benchmark_without_a_test_set_is_one_line_and_the_others_warm_up(
    tmp_path: Path, synthetic: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    # mcqa-demo comes first and has no test set; medvidbench's is loaded by build_runtime.
    runtime = build_runtime(
        tmp_path, None, synthetic["ground_truth"], benchmarks="mcqa-demo,medvidbench"
    )
    loaded = current_benchmark(runtime, "medvidbench")
    with caplog.at_level(logging.INFO, logger="medvidbench"):
        warm_up(runtime)
    records = [r for r in caplog.records if r.name.startswith("medvidbench")]
    assert [r.exc_info for r in records if r.exc_info] == []  # no traceback
    lines = [r.getMessage() for r in records if r.levelno >= logging.WARNING]
    assert lines == [
        "warm-up skipped 'mcqa-demo': no test set of 'mcqa-demo' is loaded; run "
        "'medvidbench benchmarks load GT.json --benchmark mcqa-demo'"
    ]
    assert loaded.gt_sha256 in runtime._gt_cache  # the loaded benchmark still warmed up
    runtime.engine.dispose()
