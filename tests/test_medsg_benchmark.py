"""MedSG-Bench as a plug-in: its test set, both submission formats, both profiles, offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medvidbench import benchmarks
from medvidbench.benchmarks.medsg.synth import generate_ground_truth, generate_predictions
from medvidbench.core.errors import InvalidGroundTruthError, InvalidSubmissionError, UsageError
from medvidbench.library import evaluate

MEDSG = benchmarks.get("medsg")
TASKS = [t.name for t in MEDSG.tasks]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    assert MEDSG.demo is not None
    return MEDSG.demo.synthesise(tmp_path_factory.mktemp("medsg"), 400, 3)


def run(pred: Path | bytes, gt: Path, **kw: object):  # type: ignore[no-untyped-def]
    return evaluate(pred, gt, benchmark="medsg", **kw)


def test_every_archetype_scores_as_its_answers_say(demo: dict[str, Path]) -> None:
    gt = demo["ground_truth"]
    perfect = run(demo["perfect"], gt)
    assert perfect.profile == "official" and perfect.benchmark == "medsg"
    assert all(v == 1.0 for v in perfect.metrics.values())
    strong, scaled = run(demo["strong"], gt), run(demo["scaled-1000"], gt)
    assert 0.5 < strong.metrics["overall.acc_05"] < 1.0  # type: ignore[operator]
    assert scaled.metrics["overall.acc_05"] == 0.0  # 0-1000 answers are not rescaled (official)
    rescaled = run(demo["scaled-1000"], gt, profile="corrected", options={"coordinates": "0-1000"})
    assert rescaled.metrics["overall.acc_05"] > 0.5  # type: ignore[operator]
    unit = run(demo["scaled-0-1"], gt, profile="corrected", options={"coordinates": "0-1"})
    assert unit.metrics["overall.acc_05"] > 0.5  # type: ignore[operator]
    assert run(demo["scaled-0-1"], gt).metrics["overall.acc_05"] == 0.0
    with pytest.raises(UsageError, match="need the corrected profile"):
        run(demo["scaled-1000"], gt, options={"coordinates": "0-1000"})


def test_a_partial_submission_shows_its_tasks_and_no_overall(demo: dict[str, Path]) -> None:
    report = run(demo["partial"], demo["ground_truth"])
    assert report.missing_tasks == TASKS[4:]
    assert report.metrics["overall.acc_05"] is None and report.metrics["referring.miou"] is None
    assert report.metrics["Registered_Diff.miou"] is not None


def test_the_official_results_file_scores_as_its_predictions_and_its_counters(
    demo: dict[str, Path],
) -> None:
    by_key = run(demo["strong"], demo["ground_truth"])
    results = run(demo["results_strong"], demo["ground_truth"])
    assert results.metrics == by_key.metrics
    written = json.loads(demo["results_strong"].read_text())
    counters = {k: v for rec in written if "question" not in rec for k, v in rec.items()}
    for task in TASKS:
        ours = results.per_task[task]["counters"]
        assert ours == counters[task]  # per-item IoUs summed in order, as the script does


def test_the_results_file_is_laid_out_as_the_official_script_writes_it(
    demo: dict[str, Path],
) -> None:
    """json.dump(indent=4, ensure_ascii=False), byte for byte (the demo writes it faster)."""
    text = demo["results_strong"].read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=4, ensure_ascii=False)


def test_the_files_claims_are_never_used(demo: dict[str, Path]) -> None:
    written = json.loads(demo["results_strong"].read_text())
    for rec in written:
        if "question" in rec:
            rec["iou"], rec["filter_answer"] = 1.0, rec["groundtruth"]
    lying = run(json.dumps(written).encode(), demo["ground_truth"])
    honest = run(demo["results_strong"], demo["ground_truth"])
    assert lying.metrics == honest.metrics
    assert sum(lying.per_task[t]["n_file_disagree"] for t in TASKS) > 0  # reported, not used
    assert all(honest.per_task[t]["n_file_disagree"] == 0 for t in TASKS)


def test_several_results_files_in_a_zip_or_a_folder(demo: dict[str, Path], tmp_path: Path) -> None:
    """One official results file per task, as the script writes them (one run per task)."""
    import io
    import zipfile

    written = json.loads(demo["results_strong"].read_text())
    per_task: dict[str, list[object]] = {}
    for rec in written:
        task = rec["task"] if "question" in rec else next(iter(rec))
        per_task.setdefault(task, []).append(rec)
    folder = tmp_path / "runs"
    folder.mkdir()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for n, (task, records) in enumerate(per_task.items()):
            body = json.dumps(records, indent=4)
            archive.writestr(f"qwen2_5_vl_{task}_{n:04d}.json", body)
            (folder / f"qwen2_5_vl_{task}_{n:04d}.json").write_text(body)
    expected = run(demo["results_strong"], demo["ground_truth"]).metrics
    assert run(buffer.getvalue(), demo["ground_truth"]).metrics == expected
    assert run(folder, demo["ground_truth"]).metrics == expected
    with pytest.raises(InvalidSubmissionError, match="zip"):
        run(b"PK\x03\x04 not really a zip", demo["ground_truth"])


def _bad(gt: Path, records: object, match: str) -> None:
    with pytest.raises(InvalidSubmissionError) as caught:
        run(json.dumps(records).encode(), gt)
    assert any(match in p.message for p in caught.value.problems.items), [
        p.message for p in caught.value.problems.items
    ]


def test_submission_problems_are_located(demo: dict[str, Path]) -> None:
    gt = demo["ground_truth"]
    good = json.loads(demo["strong"].read_text())
    _bad(gt, [*good, good[0]], "is repeated")
    _bad(gt, [{**good[0], "index": 10000}, *good[1:]], "index must be an integer from 0")
    _bad(
        gt,
        [r for r in good if not (r["task"] == "patch" and r["index"] in (3, 7))],
        "no prediction for index 3, 7",
    )
    _bad(gt, [*good[:3], {"task": "patch", "question": "q", "answer": "a"}], "mixes")
    _bad(gt, [{**good[0], "prediction": [1, 2, 3]}, *good[1:]], "a box of 4 numbers")
    results = json.loads(demo["results_strong"].read_text())
    items = [r for r in results if "question" in r]
    other_question = [{**items[0], "question": "Where is the lesion?"}, *items[1:]]
    _bad(gt, other_question, "is not that of 'Registered_Diff' item 0")
    other = [{**items[0], "groundtruth": [0, 0, 1, 1]}, *items[1:]]
    _bad(gt, other, "another version of the test set")
    counters = [*items, {"patch": {"TOTAL": 1}}]
    _bad(gt, counters, "TOTAL 1")
    cut = [{**r, "answer": r["answer"][:1]} if r["task"] == "patch" else r for r in items]
    _bad(gt, cut, "at most one character")
    runaway = "(1,2),(3,4) " + "5" * 40_000
    _bad(gt, [{**good[0], "prediction": runaway}, *good[1:]], "record 0: the answer is 40,012")
    _bad(gt, [{**items[0], "answer": runaway}, *items[1:]], "over the limit of 32,768")


def test_ground_truth_problems_are_located(tmp_path: Path) -> None:
    records = generate_ground_truth(16, 0)
    records[2] = {**records[2], "task": "segmentation"}
    records[3] = {**records[3], "answer": [1, 2, 3]}
    with pytest.raises(InvalidGroundTruthError) as caught:
        MEDSG.load_ground_truth(json.dumps(records).encode())
    messages = [p.message for p in caught.value.problems.items]
    assert any("record 2: task must be one of" in m for m in messages)
    assert any("record 3: answer must be 4 finite numbers" in m for m in messages)
    folder = tmp_path / "gt"
    folder.mkdir()
    good = generate_ground_truth(16, 0)
    (folder / "a.json").write_text(json.dumps(good[:5]))
    (folder / "b.json").write_text(json.dumps(good[4:]))  # the record at 4 repeats its task
    with pytest.raises(InvalidGroundTruthError, match="must be in one file"):
        MEDSG.load_ground_truth(folder)
    (folder / "b.json").write_text(json.dumps(good[5:]))
    if good[4]["task"] == good[5]["task"]:
        with pytest.raises(InvalidGroundTruthError):
            MEDSG.load_ground_truth(folder)


def test_the_old_parser_is_chosen_by_the_file_and_uses_the_items_size(tmp_path: Path) -> None:
    gt = [
        {
            "task": "multi_view",
            "images": ["a", "b", "c"],
            "question": "q",
            "answer": [256, 200, 384, 300],
            "size": [512, 400],
        },
    ]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    predictions = {
        "parser": "old",
        "predictions": [{"task": "multi_view", "index": 0, "prediction": "[500, 500, 750, 750]"}],
    }
    report = run(json.dumps(predictions).encode(), tmp_path / "gt.json")
    assert report.metrics["multi_view.miou"] == 1.0  # spec vector O11
    strong = run(json.dumps(predictions["predictions"]).encode(), tmp_path / "gt.json")
    assert strong.metrics["multi_view.miou"] == 0.0


def test_synthetic_predictions_are_deterministic() -> None:
    gt = generate_ground_truth(40, 1)
    assert generate_predictions(gt, "strong", 1) == generate_predictions(gt, "strong", 1)
    assert generate_ground_truth(40, 1) == gt


DEEP = b"[" * 200_000 + b"]" * 200_000


@pytest.mark.parametrize("slug", ["medsg", "medvidbench"])
@pytest.mark.parametrize("body", [DEEP, b'{"a": ' + DEEP + b"}\n"], ids=["json", "jsonl"])
def test_a_ground_truth_nested_too_deeply_is_a_problem_not_a_crash(slug: str, body: bytes) -> None:
    with pytest.raises(InvalidGroundTruthError, match="too deeply"):
        benchmarks.get(slug).load_ground_truth(body)


def test_predictions_nested_too_deeply_are_a_problem_not_a_crash(
    demo: dict[str, Path],
) -> None:
    for body in (DEEP, b'{"predictions": ' + DEEP + b"}"):
        with pytest.raises(InvalidSubmissionError, match="too deeply"):
            run(body, demo["ground_truth"])
