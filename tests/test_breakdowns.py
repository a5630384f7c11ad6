"""A benchmark's breakdowns (named groupings of its items beside ``dataset``): every report
gives each metric per group, from the same per-sample sums as the headline."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from medvidbench import benchmarks
from medvidbench.core.evaluation import evaluate


def test_each_group_is_its_items_metrics(tmp_path: Path) -> None:
    base = benchmarks.get("mcqa-demo")
    assert base.demo is not None
    files = base.demo.synthesise(tmp_path, 200, 1)

    def parity(item: Any) -> str:
        return "even" if item.index % 2 == 0 else "odd"

    bench = dataclasses.replace(base, breakdowns={"subject": lambda q: q.dataset, "parity": parity})
    report = evaluate(bench, files["strong"], files["ground_truth"])
    # a breakdown by the dataset is the per-dataset table again
    for subject, values in report.per_group["subject"].items():
        for key in ("acc_flexible", "acc_strict"):
            assert values[key] == pytest.approx(report.per_dataset[subject][key], abs=1e-12)
    halves = report.per_group["parity"]
    assert (
        set(halves) == {"even", "odd"} and halves["even"]["items"] == halves["odd"]["items"] == 100
    )
    mean = (halves["even"]["acc_flexible"] + halves["odd"]["acc_flexible"]) / 2
    assert mean == pytest.approx(report.metrics["acc_flexible"], abs=1e-12)
    assert evaluate(base, files["strong"], files["ground_truth"]).per_group == {}
