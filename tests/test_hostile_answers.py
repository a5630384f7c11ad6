"""No answer, and no file of answers, can stall an evaluation or the server (#32 item 7;
docs/formats.md): each task's answer cap cuts a runaway answer (with a warning), and a scoring
job past its CPU budget stops with a clear failure instead of a worker busy for an hour."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import pytest

from medvidbench import benchmarks
from medvidbench.core import cpu_budget, linear_re
from medvidbench.core.cpu_budget import CpuBudgetError
from medvidbench.library import evaluate
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.models import Submission
from tests.server.conftest import build_runtime, make_user


def _digits(path: Path, out: Path, length: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    records = json.loads(path.read_text())
    for r in records:
        r["prediction"] = "".join(rng.choice("0123456789") for _ in range(length))
    out.write_text(json.dumps(records))
    return out


def test_answers_longer_than_their_format_are_cut_with_a_warning(
    synthetic: dict[str, Path], tmp_path: Path
) -> None:
    bench = benchmarks.get("medvidbench")
    gt = bench.load_ground_truth(synthetic["ground_truth"])
    hostile = _digits(synthetic["strong"], tmp_path / "digits.json", 8_000)
    matched = bench.validate_submission(hostile, gt)
    assert matched.report.ok
    caps = {t.name: t.answer_chars for t in bench.tasks}
    for item, text in zip(gt.samples, matched.predictions, strict=True):
        assert len(text) == (caps[item.task] or 8_000)
    cut = {p.message.split("'")[1] for p in matched.report.warnings.items if p.code == "answer-cut"}
    assert cut == {
        t for t, cap in caps.items() if cap is not None and t in {s.task for s in gt.samples}
    }
    # the archetypes a real pipeline would write are never cut
    for archetype in ("perfect", "strong", "weak", "format-noisy", "garbage"):
        report = bench.validate_submission(synthetic[archetype], gt).report
        assert "answer-cut" not in report.warnings.totals, archetype


def test_a_budget_stops_work_on_its_own_thread_only() -> None:
    pattern = linear_re.compile(r"(\d+\.?\d*)\s*-\s*(\d+\.?\d*)\s*seconds")
    text = "1" * 4_000
    stopped: list[BaseException] = []

    def hostile() -> None:
        try:
            with cpu_budget.limited(0.2, "this work"):
                while True:
                    pattern.findall(text)
        except CpuBudgetError as exc:
            stopped.append(exc)

    worker = threading.Thread(target=hostile)
    worker.start()
    for _ in range(50):  # this thread has no budget: its own matching goes on
        pattern.findall(text)
    # the budget is the worker's CPU time; the wait only catches a worker never stopped (on a
    # loaded machine the two threads' turns at the interpreter lock take a while of wall time)
    worker.join(300)
    assert not worker.is_alive()
    assert stopped and "CPU time" in str(stopped[0])
    pattern.findall(text)  # and after the block, nothing is limited


def test_a_hostile_file_fails_its_scoring_job_clearly_and_once(
    synthetic: dict[str, Path], tmp_path: Path
) -> None:
    hostile = _digits(synthetic["strong"], tmp_path / "digits.json", 8_000)
    rt = build_runtime(tmp_path, None, synthetic["ground_truth"], scoring_cpu_seconds=3.0)
    try:
        began = time.process_time()  # CPU time: a loaded machine stretches only the wall time
        sub = submit(rt, make_user(rt), hostile.read_bytes(), "Digits")
        with rt.sessions() as session:
            row = session.get(Submission, sub.id)
            assert row is not None and row.status == "failed"
            assert "CPU time" in (row.error or "") and "Traceback" not in (row.error or "")
            assert row.step_attempts == 1  # not tried again: it would cost as much
        assert time.process_time() - began < 60
        # a valid file on the same server scores within the budget
        fine = submit(rt, make_user(rt, "bob"), synthetic["strong"].read_bytes(), "Fine")
        with rt.sessions() as session:
            assert session.get(Submission, fine.id).status in ("scored", "complete")  # type: ignore[union-attr]
    finally:
        rt.engine.dispose()


def test_offline_evaluation_of_the_hostile_file_finishes(
    synthetic: dict[str, Path], tmp_path: Path
) -> None:
    """Offline there is no budget (the user's own machine), and the caps bound the cost."""
    hostile = _digits(synthetic["strong"], tmp_path / "digits.json", 8_000)
    report = evaluate(hostile, synthetic["ground_truth"])
    assert report.submission["warning_totals"].get("answer-cut", 0) >= 4
    assert report.metrics["tag_miou_03"] == pytest.approx(0.0)
