"""The shared golden-file tester: every task's hand-derived vectors (metrics.md §8), per profile.

Each ``tests/data/<task>/golden.json`` lists cases (a ground-truth record's parts, a prediction,
expected numbers per profile) and sets of cases with expected aggregates. A case's expected keys
are metric keys, ``parsed`` (the parser read the answer), ``evaluated`` (samples counted) or a
task diagnostic such as ``level_accuracy``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from medvidbench.benchmarks.medvidbench import BENCHMARK
from medvidbench.benchmarks.medvidbench.groundtruth import load_ground_truth
from medvidbench.benchmarks.medvidbench.tasks import rule_based_scorers, task_for_qa_type
from medvidbench.core.scoring import Context, TaskResult
from tests.conftest import gt_record

DATA = Path(__file__).parent.parent / "data"
GOLDEN = {p.parent.name: json.loads(p.read_text()) for p in sorted(DATA.glob("*/golden.json"))}
TOLERANCE = 5e-5  # expected values are given to 4 decimals


def record(spec: dict[str, Any], case: dict[str, Any], n: int) -> dict[str, Any]:
    return gt_record(
        video_id=f"clip{n}",
        qa_type=case.get("qa_type", spec["qa_type"]),
        question=case.get("question", spec.get("default_question", "What happens?")),
        answer=case.get("answer", spec.get("default_answer", "")),
        data_source=case.get("dataset", spec["dataset"]),
        struc_info=case.get("struc_info", spec.get("default_struc_info", [])),
        fps=case.get("fps", "1.0"),
    )


def run(task: str, cases: list[dict[str, Any]], profile: str) -> TaskResult:
    spec = GOLDEN[task]
    gt = load_ground_truth(json.dumps([record(spec, c, n) for n, c in enumerate(cases)]).encode())
    scorer = rule_based_scorers()[task_for_qa_type(spec["qa_type"]) or ""]
    return scorer.evaluate(
        gt.samples, [c["prediction"] for c in cases], BENCHMARK.profile(profile), Context()
    )


def check(result: TaskResult, expected: dict[str, Any]) -> None:
    for key, want in expected.items():
        if key == "parsed":
            got: Any = result.samples[0].parsed
        elif key in result.metrics:
            got = result.metrics[key]
        else:
            got = result.diagnostics[key]
        if isinstance(want, float) and got is not None:
            assert got == pytest.approx(want, abs=TOLERANCE), key
        else:
            assert got == want, key


CASES = [
    pytest.param(task, case, profile, id=f"{task}-{case['id']}-{profile}")
    for task, spec in GOLDEN.items()
    for case in spec["cases"]
    for profile in case.get("expected", {})
]
SETS = [
    pytest.param(task, group, profile, id=f"{task}-{group['id']}-{profile}")
    for task, spec in GOLDEN.items()
    for group in spec.get("sets", [])
    for profile in group["expected"]
]


def test_every_task_with_a_rule_based_metric_has_golden_vectors() -> None:
    assert set(GOLDEN) == {
        "tal",
        "stg",
        "next_action",
        "dense_captioning",
        "skill_assessment",
        "cvs_assessment",
    }


@pytest.mark.parametrize(("task", "case", "profile"), CASES)
def test_case(task: str, case: dict[str, Any], profile: str) -> None:
    check(run(task, [case], profile), case["expected"][profile])


@pytest.mark.parametrize(("task", "group", "profile"), SETS)
def test_set(task: str, group: dict[str, Any], profile: str) -> None:
    by_id = {c["id"]: c for c in GOLDEN[task]["cases"]}
    check(run(task, [by_id[i] for i in group["cases"]], profile), group["expected"][profile])
