"""The kernel's rules hold for every installed benchmark, whatever its plug-in checks itself
(#32 item 5: an MCQA-Demo file answering 199 of 200 questions was scored and ranked first).

Each benchmark's own file format is exercised through its demo data; a plug-in that forgot the
rules is imitated by a test-set format that returns a matched submission without checking, and
the kernel must still refuse it.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark
from medvidbench.core.errors import Problem
from medvidbench.core.submission import MatchedSubmission, TaskCoverage, ValidationReport

INSTALLED = benchmarks.slugs()


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, dict[str, Path]]]:
    out = {}
    for slug in INSTALLED:
        bench = benchmarks.get(slug)
        assert bench.demo is not None, f"{slug} has no demo data to test the kernel rules on"
        files = bench.demo.synthesise(tmp_path_factory.mktemp(slug), 120, 3)
        out[slug] = (bench.load_ground_truth(files["ground_truth"]), files)
    return out


class Careless:
    """A test-set format that matches every answer and checks nothing (a plug-in's bug)."""

    def __init__(
        self, inner: Any, drop: set[int], extra_task: bool = False, own_error: bool = False
    ) -> None:
        self.inner, self.drop, self.extra_task = inner, drop, extra_task
        self.own_error = own_error  # the plug-in finds a problem of its own in the file

    def load_ground_truth(self, source: Any, max_bytes: int | None = None) -> Any:
        return self.inner.load_ground_truth(source, max_bytes)

    def load_questions(self, source: Any, max_bytes: int | None = None) -> Any:
        return self.inner.load_questions(source, max_bytes)

    def validate_submission(
        self, source: Any, test_set: Any, max_bytes: int | None = None, name: str = ""
    ) -> MatchedSubmission:
        matched = self.inner.validate_submission(source, test_set, max_bytes, name)
        predictions = [None if i in self.drop else p for i, p in enumerate(matched.predictions)]
        report = ValidationReport("careless", matched.report.sha256, 0)
        # the plug-in claims every task complete
        report.coverage = {
            t: TaskCoverage(t, c.expected, c.expected) for t, c in matched.report.coverage.items()
        }
        if self.own_error:
            report.errors.add(Problem("wrong-type", "record 9: the plug-in's own finding"))
        return MatchedSubmission(report, predictions)


def _first_archetype(bench: Benchmark, files: dict[str, Path]) -> Path:
    """The demo's first model archetype's file (the perfect one, where there is one)."""
    assert bench.demo is not None and bench.demo.archetypes
    return files[bench.demo.archetypes[0]]


def _careless(bench: Benchmark, drop: set[int]) -> Benchmark:
    return dataclasses.replace(bench, testset=Careless(bench.testset, drop))


@pytest.mark.parametrize("slug", INSTALLED)
def test_a_task_answered_in_part_is_refused_by_the_kernel(slug: str, demos: Any) -> None:
    gt, files = demos[slug]
    bench = benchmarks.get(slug)
    source = _first_archetype(bench, files)
    whole = bench.validate_submission(source, gt)
    assert whole.report.ok, [p.message for p in whole.report.errors.items]
    first_task = gt.samples[0].task
    careless = _careless(bench, {0})
    matched = careless.validate_submission(source, gt)
    assert not matched.report.ok
    [problem] = [p for p in matched.report.errors.items if p.code == "incomplete-task"]
    assert (
        repr(first_task) in problem.message
        and repr(str(gt.samples[0].sample_id)) in problem.message
    )
    assert matched.report.coverage[first_task].status == "incomplete"


@pytest.mark.parametrize("slug", INSTALLED)
def test_a_file_refused_for_another_reason_still_names_its_unanswered_items(
    slug: str, demos: Any
) -> None:
    """adding-a-benchmark.md: the kernel applies the rules whatever the matcher found; a
    matcher's own error does not hide the task the file leaves in part unanswered."""
    gt, files = demos[slug]
    bench = benchmarks.get(slug)
    careless = dataclasses.replace(bench, testset=Careless(bench.testset, {0}, own_error=True))
    matched = careless.validate_submission(_first_archetype(bench, files), gt)
    codes = [p.code for p in matched.report.errors.items]
    assert "wrong-type" in codes and "incomplete-task" in codes, codes


@pytest.mark.parametrize("slug", INSTALLED)
def test_a_file_that_answers_nothing_is_refused(slug: str, demos: Any) -> None:
    gt, files = demos[slug]
    bench = benchmarks.get(slug)
    source = _first_archetype(bench, files)
    matched = _careless(bench, set(range(len(gt)))).validate_submission(source, gt)
    assert [p.code for p in matched.report.errors.items] == ["no-predictions"]


@pytest.mark.parametrize("slug", INSTALLED)
def test_a_task_left_out_entirely_is_partial_not_an_error(slug: str, demos: Any) -> None:
    gt, files = demos[slug]
    bench = benchmarks.get(slug)
    tasks = sorted({s.task for s in gt.samples})
    source = _first_archetype(bench, files)
    dropped = {s.index for s in gt.samples if s.task == tasks[0]}
    matched = _careless(bench, dropped).validate_submission(source, gt)
    if len(tasks) == 1:  # leaving out the only task answers nothing
        assert [p.code for p in matched.report.errors.items] == ["no-predictions"]
    else:
        assert matched.report.ok and matched.report.missing_tasks == [tasks[0]]


def test_mcqa_demo_199_of_200_is_refused_by_the_cli_and_never_ranked(tmp_path: Path) -> None:
    """The issue's own case, through the real command line."""
    bench = benchmarks.get("mcqa-demo")
    assert bench.demo is not None
    files = bench.demo.synthesise(tmp_path / "demo", 200, 0)
    records = json.loads(files["perfect"].read_text())
    partial = tmp_path / "partial.json"
    partial.write_text(
        json.dumps(records[:-1] if isinstance(records, list) else dict(list(records.items())[:-1]))
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "medvidbench",
            "evaluate",
            str(partial),
            "--benchmark",
            "mcqa-demo",
            "--ground-truth",
            str(files["ground_truth"]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 4, run.stdout + run.stderr
    assert "199 of 200" in run.stderr and "Traceback" not in run.stderr
