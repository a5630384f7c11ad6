"""Files that real pipelines write are scored as the same answers in test-file order score.

MedGRPO-Code (the paper's inference code) splits the test file round-robin per qa_type over N
GPUs and merges the shards GPU after GPU; several questions of one clip are identical, so only
the order says which answer is which. Its files are built here by :mod:`tests.medgrpo_code`,
which follows the pipeline's documented behaviour.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from medvidbench.benchmarks.medvidbench import layouts
from medvidbench.benchmarks.medvidbench.groundtruth import (
    GroundTruth,
    load_ground_truth,
    load_questions,
)
from medvidbench.benchmarks.medvidbench.matching import validate_submission
from medvidbench.benchmarks.medvidbench.synth import generate_ground_truth, generate_predictions
from medvidbench.cli.main import app
from medvidbench.core.errors import InvalidGroundTruthError
from medvidbench.library import evaluate
from tests import medgrpo_code as pipeline

Record = dict[str, Any]


@pytest.fixture(scope="module")
def world() -> dict[str, Any]:
    """A 900-sample synthetic test set and the strong archetype's answers, in test order."""
    test = generate_ground_truth(900, 0)
    answers = generate_predictions(test, "strong", 0)
    return {
        "test": test,
        "answers": answers,
        "text": {id(r): a["prediction"] for r, a in zip(test, answers, strict=True)},
        "gt": load_ground_truth(json.dumps(test).encode()),
    }


def _encode(data: Any) -> bytes:
    return json.dumps(data).encode()


def _in_order(world: dict[str, Any]) -> list[str]:
    return [a["prediction"] for a in world["answers"]]


def _run(world: dict[str, Any], n: int) -> list[dict[str, Record]]:
    return pipeline.run(world["test"], n, lambda r: world["text"][id(r)])


def _order_only(report: Any) -> list[str]:
    return [p.message for p in report.warnings.items if p.code == "order-only"]


def test_the_synthetic_set_has_identical_questions_that_only_order_tells_apart(
    world: dict[str, Any],
) -> None:
    gt: GroundTruth = world["gt"]
    assert gt.warnings.totals.get("indistinguishable-samples", 0) > 10


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8, 16])
@pytest.mark.parametrize("kind", ["merged", "converted"])
def test_a_merged_or_converted_run_answers_each_question_it_was_asked(
    world: dict[str, Any], n: int, kind: str
) -> None:
    merged = pipeline.merge(_run(world, n))
    data = merged if kind == "merged" else pipeline.convert(merged)
    result = validate_submission(_encode(data), world["gt"])
    assert result.report.verdict == "valid"
    assert result.predictions == _in_order(world)
    assert result.report.restored == ("" if n == 1 else layouts.describe(n))
    assert _order_only(result.report) == [] and result.report.order_only == {}


@pytest.mark.parametrize("n", [2, 4, 8])
def test_per_gpu_files_given_together_in_any_order(
    world: dict[str, Any], n: int, tmp_path: Path
) -> None:
    shards = _run(world, n)
    paths = []
    for g, shard in enumerate(shards):
        paths.append(tmp_path / f"results_gpu{g}.json")
        paths[-1].write_text(json.dumps(shard))
    random.Random(n).shuffle(paths)
    # MedGRPO-Code's results folder: the merged file beside the per-GPU ones, and its logs
    (tmp_path / "results.json").write_text(json.dumps(pipeline.merge(shards)))
    (tmp_path / "logs").mkdir()
    for source in (paths, tmp_path):
        result = validate_submission(source, world["gt"])
        assert result.report.verdict == "valid"
        assert result.predictions == _in_order(world)
        assert result.report.restored == (f"{layouts.describe(n)} from its {n} per-GPU files")
        assert result.report.records == len(world["test"])


def test_a_run_on_some_tasks_only_is_restored_too(world: dict[str, Any]) -> None:
    kept = [r for r in world["test"] if r["qa_type"] in ("cvs_assessment", "skill_assessment")]
    data = pipeline.convert(pipeline.merge(pipeline.run(kept, 4, lambda r: world["text"][id(r)])))
    result = validate_submission(_encode(data), world["gt"])
    assert result.report.verdict == "partial"
    assert result.report.restored == layouts.describe(4)
    wanted = [
        a["prediction"] if a["qa_type"] in ("cvs_assessment", "skill_assessment") else None
        for a in world["answers"]
    ]
    assert result.predictions == wanted


def test_a_file_shuffled_out_of_any_known_order_gets_the_order_only_warning(
    world: dict[str, Any],
) -> None:
    shuffled = list(world["answers"])
    random.Random(5).shuffle(shuffled)
    report = validate_submission(_encode(shuffled), world["gt"]).report
    assert report.verdict == "valid" and report.restored == ""
    assert report.order_only and set(report.order_only) <= set(report.coverage)
    cvs = next(m for m in _order_only(report) if m.startswith("task 'cvs_assessment'"))
    assert f"{report.order_only['cvs_assessment']:,} predictions were matched" in cvs
    assert "by order alone" in cvs and "Add an 'index' field to each record" in cvs
    assert report.to_dict()["order_only"] == report.order_only
    report.refuse_order_only()
    assert report.verdict == "invalid" and _order_only(report) == []
    assert report.errors.totals["order-only"] == len(report.order_only)


def test_identical_questions_count_even_when_records_carry_the_question(
    world: dict[str, Any],
) -> None:
    results = pipeline.merge(_run(world, 1))
    rows = list(results.values())
    random.Random(2).shuffle(rows)
    report = validate_submission(_encode(dict(enumerate(rows))), world["gt"]).report
    gt: GroundTruth = world["gt"]
    identical = sum(
        n
        for members in gt.groups.values()
        for q in {gt.samples[m].question for m in members}
        if (n := sum(gt.samples[m].question == q for m in members)) > 1
    )
    assert sum(report.order_only.values()) == identical


def test_an_index_field_makes_any_order_exact(world: dict[str, Any]) -> None:
    indexed = [{**a, "index": i} for i, a in enumerate(world["answers"])]
    random.Random(9).shuffle(indexed)
    result = validate_submission(_encode(indexed), world["gt"])
    assert result.predictions == _in_order(world) and not result.report.warnings


def test_layouts_that_give_different_orders_for_the_same_file_are_not_guessed() -> None:
    # two questions of one type and nothing else: N=1 keeps [0, 1], N=2 too (0 then 1)
    assert layouts.merged_order([0, 1], ["a", "a"], 2) == [0, 1]
    assert layouts.find_merged(2, lambda order: True, [0, 1], ["a", "a"]) == (1, [0, 1])
    # three of one type: N=2 gives [0, 2, 1], which differs: ambiguous when both fit
    assert layouts.find_merged(3, lambda order: True, [0, 1, 2], ["a"] * 3) is None


def test_uneven_shares_go_to_the_first_gpus() -> None:
    types = ["a"] * 5 + ["b"] * 2
    shares = [layouts.gpu_share(range(7), types, 3, g) for g in range(3)]
    assert shares == [[0, 3, 5], [1, 4, 6], [2]]


def test_full_size_four_gpu_runs_score_as_the_test_order(tmp_path: Path) -> None:
    test = generate_ground_truth(6245, 0)
    answers = generate_predictions(test, "perfect", 0)
    text = {id(r): a["prediction"] for r, a in zip(test, answers, strict=True)}
    gt = load_ground_truth(_encode(test))
    tasks = ["cvs_assessment", "skill_assessment", "stg", "tal", "dense_captioning"]
    expected = evaluate(_encode(answers), gt, tasks=tasks).metrics
    merged = pipeline.merge(pipeline.run(test, 4, lambda r: text[id(r)]))
    for data in (merged, pipeline.convert(merged)):
        assert evaluate(_encode(data), gt, tasks=tasks).metrics == expected
    assert expected["cvs_acc"] == expected["sa_acc"] == expected["stg_miou"] == 1.0


# --- the public questions file ----------------------------------------------------------------


def _questions(test: list[Record]) -> list[Record]:
    out = []
    for r in test:
        q = {k: v for k, v in r.items() if k not in ("struc_info", "data_source")}
        q["conversations"] = r["conversations"][:1]
        out.append(q)
    return out


def test_the_questions_file_checks_a_submission_without_answers(world: dict[str, Any]) -> None:
    raw = _encode(_questions(world["test"]))
    # the scorer's loader refuses it: no answers to score against
    with pytest.raises(InvalidGroundTruthError, match="expected a 'human' and a 'gpt' turn"):
        first = world["test"][0]
        load_ground_truth(_encode([{**first, "conversations": first["conversations"][:1]}]))
    questions = load_questions(raw)
    assert not questions.answers and {s.answer for s in questions.samples} == {""}
    data = pipeline.convert(pipeline.merge(_run(world, 4)))
    data[0]["prediction"] = "no idea"
    result = validate_submission(_encode(data), questions)
    assert result.report.verdict == "valid"
    assert result.report.restored == layouts.describe(4)
    first = next(i for i, p in enumerate(result.predictions) if p == "no idea")
    task = questions.samples[first].task
    assert result.report.readable[task] == result.report.coverage[task].matched - 1
    (unreadable,) = [p.message for p in result.report.warnings.items]
    assert unreadable.startswith(f"task {task!r}: 1 of ") and "'no idea'" in unreadable


def test_a_questions_file_needs_the_question(world: dict[str, Any]) -> None:
    broken = _questions(world["test"][:3])
    broken[1]["conversations"] = []
    with pytest.raises(InvalidGroundTruthError, match="expected a 'human' turn"):
        load_questions(_encode(broken))


def test_validate_cli_with_questions_strict_and_shards(
    world: dict[str, Any], tmp_path: Path
) -> None:
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(_questions(world["test"])))
    shards = _run(world, 2)
    files = []
    for g, shard in enumerate(shards):
        files.append(tmp_path / f"results_gpu{g}.json")
        files[-1].write_text(json.dumps(shard))
    runner = CliRunner()
    ok = runner.invoke(app, ["validate", *map(str, files), "--questions", str(questions)])
    assert ok.exit_code == 0, ok.output
    assert "restored the order of a 2-GPU MedGRPO-Code run from its 2 per-GPU files" in ok.output
    assert "nothing was scored" in ok.output
    shuffled = list(world["answers"])
    random.Random(1).shuffle(shuffled)
    moved = tmp_path / "shuffled.json"
    moved.write_text(json.dumps(shuffled))
    warned = runner.invoke(app, ["validate", str(moved), "--questions", str(questions)])
    assert warned.exit_code == 0
    assert "order-only" in warned.output and "by order alone" in warned.output
    refused = runner.invoke(
        app, ["validate", str(moved), "--questions", str(questions), "--strict", "--json"]
    )
    assert refused.exit_code == 4  # an invalid file (docs/cli.md)
    body = json.loads(refused.output)
    assert body["verdict"] == "invalid" and body["error_totals"]["order-only"] >= 1
    neither = runner.invoke(app, ["validate", str(moved)])
    assert neither.exit_code != 0 and "either --ground-truth or --questions" in neither.output


def test_evaluate_cli_scores_per_gpu_files_as_the_ordered_file(
    world: dict[str, Any], tmp_path: Path
) -> None:
    truth = tmp_path / "ground_truth.json"
    truth.write_text(json.dumps(world["test"]))
    ordered = tmp_path / "ordered.json"
    ordered.write_text(json.dumps(world["answers"]))
    files = _write_shards(world, tmp_path, 3)
    runner = CliRunner()
    tasks = ["--tasks", "cvs_assessment,skill_assessment,stg,tal", "--json"]
    expected = runner.invoke(app, ["evaluate", str(ordered), "--ground-truth", str(truth), *tasks])
    got = runner.invoke(app, ["evaluate", *map(str, files), "--ground-truth", str(truth), *tasks])
    assert expected.exit_code == got.exit_code == 0, got.output
    assert "restored the order of a 3-GPU MedGRPO-Code run from its 3 per-GPU files" in got.stderr
    assert json.loads(got.stdout)["metrics"] == json.loads(expected.stdout)["metrics"]
    shuffled = list(world["answers"])
    random.Random(3).shuffle(shuffled)
    ordered.write_text(json.dumps(shuffled))
    refused = runner.invoke(
        app, ["evaluate", str(ordered), "--ground-truth", str(truth), "--strict", *tasks]
    )
    assert refused.exit_code == 4 and "order-only" in refused.stderr


def test_the_report_file_keeps_what_validation_said(world: dict[str, Any], tmp_path: Path) -> None:
    """`evaluate --out REPORT.json` records a restored layout and the warnings it printed (an
    order-only match, here), so that the file read later says what the terminal said."""
    truth = tmp_path / "ground_truth.json"
    truth.write_text(json.dumps(world["test"]))
    files = _write_shards(world, tmp_path, 2)
    shuffled = list(world["answers"])
    random.Random(7).shuffle(shuffled)
    (tmp_path / "shuffled.json").write_text(json.dumps(shuffled))
    runner = CliRunner()
    for source, out in ((files, "restored.json"), ([tmp_path / "shuffled.json"], "warned.json")):
        options = ["--ground-truth", str(truth), "--tasks", "cvs_assessment,stg"]
        done = runner.invoke(
            app, ["evaluate", *map(str, source), *options, "--out", str(tmp_path / out)]
        )
        assert done.exit_code == 0, done.output
    restored = json.loads((tmp_path / "restored.json").read_text())["submission"]
    assert restored["restored"] == f"{layouts.describe(2)} from its 2 per-GPU files"
    assert restored["verdict"] == "valid" and "order-only" not in restored["warning_totals"]
    warned = json.loads((tmp_path / "warned.json").read_text())["submission"]
    assert warned["restored"] == "" and warned["warning_totals"]["order-only"] >= 1
    shown = [w for w in warned["warnings"] if w["code"] == "order-only"]
    assert shown and "by order alone" in shown[0]["message"]


def _write_shards(world: dict[str, Any], folder: Path, n: int) -> list[Path]:
    """An ``n``-GPU run's per-GPU results files, as the pipeline writes them."""
    files = []
    for g, shard in enumerate(_run(world, n)):
        files.append(folder / f"results_gpu{g}.json")
        files[-1].write_text(json.dumps(shard))
    return files


def test_a_file_in_test_order_with_one_refused_record_gets_no_order_only_warning(
    world: dict[str, Any],
) -> None:
    """One unknown qa_type in a file otherwise in the test file's order: the record's error and
    the task it leaves incomplete are reported, and no warning claims the file is in neither
    the test file's order nor a pipeline's (its order was not looked for: it is invalid)."""
    answers = [dict(a) for a in world["answers"]]
    assert validate_submission(_encode(answers), world["gt"]).report.order_only == {}
    answers[5]["qa_type"] = "tall"
    report = validate_submission(_encode(answers), world["gt"]).report
    assert report.verdict == "invalid" and report.errors.totals["unknown-qa-type"] == 1
    assert _order_only(report) == [] and report.order_only == {}
