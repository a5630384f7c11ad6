"""GMAI-MMBench, scored as VLMEvalKit scores it: the numbers VLMEvalKit's own
``GMAIMMBenchDataset.evaluate`` (exact matching, no judge) wrote for a 22-question table
(open-compass/VLMEvalKit e8e78f05f3080fe28154f2130321f17951c3be94, and the older rule sets at
c026693a and 0bccf452), reproduced from the files VLMEvalKit wrote and from the same answers in
every format it writes; the test set, located errors, the demo archetypes, the importer and the
plug-in contract.

The data (tests/data/gmai_mmbench/) are the inputs and outputs of that run: the dataset TSV,
VLMEvalKit's prediction workbook and its ``_exact_matching_result.xlsx``, and vectors.json.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from medvidbench import benchmarks
from medvidbench.benchmarks.gmai_mmbench import ARCHETYPES, BENCHMARK
from medvidbench.benchmarks.gmai_mmbench import synth as gmai_synth
from medvidbench.benchmarks.gmai_mmbench.importers import IMPORTERS
from medvidbench.cli.main import app
from medvidbench.core.errors import InvalidGroundTruthError, InvalidSubmissionError
from medvidbench.core.scoring import TaskResult
from medvidbench.core.tables import read_table
from medvidbench.library import evaluate
from medvidbench.testing import assert_conforms
from tests.toolkit_outputs import vlmevalkit_json, vlmevalkit_tsv, vlmevalkit_xlsx

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "gmai_mmbench"
VECTORS = json.loads((DATA / "vectors.json").read_text("utf-8"))
TOY = DATA / "toy_GMAI-MMBench_VAL.tsv"  # the dataset TSV VLMEvalKit was given
PREDICTIONS = DATA / "ToyModel_GMAI-MMBench_VAL.xlsx"  # the prediction file it scored
RESULT = DATA / "ToyModel_GMAI-MMBench_VAL_exact_matching_result.xlsx"  # what it wrote back
ITEMS = VECTORS["aggregate"]["items"]
EXPECTED = VECTORS["aggregate"]["expected"]
SLUG = "gmai-mmbench"
# The sub-board files VLMEvalKit wrote -> our breakdowns.
SUB_BOARDS = {
    "clinical vqa task": "clinical VQA task",
    "department": "department",
    "perceptual granularity": "perceptual granularity",
}
OLDER = {
    "v0_pre_2025-08-04": "vlmevalkit-2024",
    "v1_2025-08-04_to_2026-06-17": "vlmevalkit-2025-08",
}


def _scored(source: Any, profile: str = "vlmevalkit") -> tuple[Any, dict[int, float]]:
    """The report, and each question's hit by VLMEvalKit index."""
    gt = BENCHMARK.load_ground_truth(TOY)
    results: list[TaskResult] = []
    report = evaluate(source, gt, profile, benchmark=SLUG, on_result=results.append)
    [task] = results
    return report, {gt.samples[r.index].key: r.values["acc"] for r in task.samples}  # type: ignore[index]


def _sub_board(name: str) -> dict[str, float | None]:
    """A sub-board CSV as VLMEvalKit wrote it (its raw text: the floats exactly)."""
    raw = EXPECTED["grouped_csv"][f"ToyModel_GMAI-MMBench_VAL_{name}_acc.csv#raw"]
    header, values = list(csv.reader(io.StringIO(raw)))
    return {
        k: (float(v) if v else None) for k, v in zip(header, values, strict=True) if k != "split"
    }


def test_the_run_is_vlmevalkits_at_the_commit_we_name() -> None:
    assert VECTORS["about"]["commit"] == "e8e78f05f3080fe28154f2130321f17951c3be94"
    assert VECTORS["aggregate"]["judge"] == "exact_matching" and len(ITEMS) == 22


@pytest.mark.parametrize("source", [PREDICTIONS, RESULT], ids=["prediction", "result"])
def test_every_number_vlmevalkit_reported_on_its_own_files(source: Path) -> None:
    report, hits = _scored(source)
    assert hits == {item["index"]: float(item["hit"]) for item in ITEMS}
    assert report.metrics == {"acc": EXPECTED["returned_acc"][0]["Overall"]} == {"acc": 0.5}
    for name, breakdown in SUB_BOARDS.items():
        board = _sub_board(name)
        ours = report.per_group[breakdown]
        assert board.pop("Overall") == report.metrics["acc"]
        for group, value in board.items():
            if value is None:  # VLMEvalKit leaves a missing value's column empty ...
                assert (name, group) == ("department", "None")
                assert ours[group] == {"items": 2, "acc": 0.5}  # ... we give its accuracy
            else:
                assert ours[group]["acc"] == value, (name, group)
        assert set(ours) == set(board)
    # the per-task table is the clinical VQA task sub-board
    tasks = {t: v["acc"] for t, v in report.per_dataset.items()}
    assert tasks == {g: v["acc"] for g, v in report.per_group["clinical VQA task"].items()}


def test_vlmevalkits_returned_table_per_answer_label() -> None:
    _, hits = _scored(PREDICTIONS)
    by_label: dict[str, list[float]] = {}
    for item in ITEMS:
        by_label.setdefault(item["category"], []).append(hits[item["index"]])
    returned = dict(EXPECTED["returned_acc"][0])
    assert returned.pop("split") == "none"
    assert returned.pop("Overall") == sum(hits.values()) / len(hits)
    assert {k: sum(v) / len(v) for k, v in by_label.items()} == returned


@pytest.mark.parametrize(("version", "profile"), OLDER.items())
def test_the_older_rule_sets_as_vlmevalkit_ran_them(version: str, profile: str) -> None:
    report, hits = _scored(PREDICTIONS, profile)
    assert hits == {item["index"]: float(item["hit_by_version"][version]) for item in ITEMS}
    overall = VECTORS["about"]["older_versions"][version]["overall_on_aggregate"]
    assert report.metrics["acc"] == overall
    assert report.profile == profile


def _rows() -> tuple[list[str], list[list[Any]]]:
    """VLMEvalKit's prediction table, as its workbook holds it."""
    rows = read_table(PREDICTIONS.read_bytes(), PREDICTIONS.name)
    header = list(rows[0])
    return header, [[r[h] for h in header] for r in rows]


def _formats(tmp_path: Path) -> dict[str, bytes]:
    header, body = _rows()
    # pandas' to_dict gives NaN for an empty cell, and json.dump writes it as NaN
    nan = [[math.nan if v is None else v for v in row] for row in body]
    at = header.index("prediction")
    return {
        "model_GMAI-MMBench_VAL.tsv": vlmevalkit_tsv(header, body),
        "model_GMAI-MMBench_VAL.json": vlmevalkit_json(header, nan),
        "model_GMAI-MMBench_VAL.xlsx": vlmevalkit_xlsx(header, body, tmp_path / "p.xlsx"),
        "plain.json": json.dumps([{"index": r[0], "prediction": r[at]} for r in body]).encode(),
    }


def test_every_file_vlmevalkit_writes_scores_the_same(tmp_path: Path) -> None:
    want = {item["index"]: float(item["hit"]) for item in ITEMS}
    files = _formats(tmp_path)
    assert b"NaN" in files["model_GMAI-MMBench_VAL.json"]  # VLMEvalKit's JSON is not strict
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        report, hits = _scored(path)
        assert hits == want, name
        assert report.metrics == {"acc": 0.5}, name
        assert report.submission["verdict"] == "valid", name


def test_an_incomplete_file_is_refused_by_the_kernel(tmp_path: Path) -> None:
    header, body = _rows()
    path = tmp_path / "partial.tsv"
    path.write_bytes(vlmevalkit_tsv(header, body[1:]))
    gt = BENCHMARK.load_ground_truth(TOY)
    report = BENCHMARK.validate_submission(path, gt).report
    assert [p.code for p in report.errors.items] == ["incomplete-task"]
    assert "21 of 22 items" in report.errors.items[0].message
    with pytest.raises(InvalidSubmissionError, match="21 of 22"):
        evaluate(path, gt, benchmark=SLUG)


def test_a_broken_file_is_reported_row_by_row_never_raised() -> None:
    gt = BENCHMARK.load_ground_truth(TOY)
    sent = [
        {"index": 1, "prediction": "A"},
        {"index": 1, "prediction": "B"},
        {"index": 999, "prediction": "A"},
        {"index": "two", "prediction": "A"},
        {"index": 3, "prediction": ["E"]},
        {"index": 4},
        {"index": 5, "prediction": "C", "question": "Which finger is broken?"},
    ]
    report = BENCHMARK.validate_submission(json.dumps(sent).encode(), gt).report
    assert [(p.code, p.record) for p in report.errors.items] == [
        ("bad-index", 3),
        ("wrong-type", 4),
        ("missing-field", 5),
        ("duplicate", 1),
        ("no-such-item", 2),
        ("index-mismatch", 6),
        ("incomplete-task", None),  # the kernel's: 1 of 22 answered
    ]
    assert "record 2 (index 999): the test set has no question" in report.errors.items[4].message
    for junk in (b"\x00\x01 not a table", b"[1, 2", b"PK\x03\x04broken"):
        assert not BENCHMARK.validate_submission(junk, gt).report.ok


def _tsv(rows: list[dict[str, str]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _toy_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(TOY.read_text("utf-8")), delimiter="\t"))


def test_the_test_set_is_read_as_vlmevalkit_reads_it() -> None:
    gt = BENCHMARK.load_ground_truth(TOY)
    by_key = {q.key: q for q in gt.samples}
    assert len(gt) == 22 and [q.index for q in gt.samples] == list(range(22))
    assert sorted(by_key[18].options) == ["A", "B", "C"]  # option D's text "None" is no option
    assert by_key[19].department == "None" and by_key[19].dataset == "Disease Diagnosis"
    assert by_key[3].options["E"] == "pleural effusion" and "E" not in by_key[1].options
    assert not gt.warnings
    rows = _toy_rows()
    rows[0] |= {"answer": "D", "D": "NA"}  # the right option is one pandas reads as missing
    renamed = [{k.upper() if len(k) > 1 else k: v for k, v in r.items()} for r in rows]
    warned = BENCHMARK.load_ground_truth(_tsv(renamed))  # long names in any case
    assert [p.code for p in warned.warnings.items] == ["answer-not-an-option"]  # type: ignore[attr-defined]


def test_the_test_split_is_a_questions_file() -> None:
    rows = [{k: v for k, v in r.items() if k != "answer"} for r in _toy_rows()]
    with pytest.raises(InvalidGroundTruthError, match="answer"):
        BENCHMARK.load_ground_truth(_tsv(rows))
    questions = BENCHMARK.load_questions(_tsv(rows))
    report = BENCHMARK.validate_submission(PREDICTIONS, questions).report
    assert report.verdict == "valid" and report.matched == 22


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"index": "1"}, "duplicate-index"),
        ({"index": "one"}, "bad-index"),
        ({"answer": ""}, "no-answer"),
    ],
)
def test_a_broken_test_set_is_refused_with_its_rows(change: dict[str, str], code: str) -> None:
    rows = _toy_rows()
    rows[4] |= change
    with pytest.raises(InvalidGroundTruthError) as err:
        BENCHMARK.load_ground_truth(_tsv(rows))
    assert [(p.code, p.record) for p in err.value.problems.items] == [(code, 4)]
    assert "row 6" in err.value.problems.items[0].message


def test_the_demo_archetypes_behave_as_documented(tmp_path: Path) -> None:
    assert BENCHMARK.demo is not None and gmai_synth.ARCHETYPES == ARCHETYPES
    files = BENCHMARK.demo.synthesise(tmp_path, 300, 2)
    gt = BENCHMARK.load_ground_truth(files["ground_truth"])
    assert len(gt) == 300 and len({q.department for q in gt.samples}) == 7
    assert {len(q.options) for q in gt.samples} == {2, 3, 4, 5}
    acc = {
        (a, p.name): evaluate(files[a], gt, p.name, benchmark=SLUG).metrics["acc"]
        for a in ARCHETYPES
        for p in BENCHMARK.profiles
    }
    for p in BENCHMARK.profiles:
        assert acc["perfect", p.name] == 1.0 and acc["garbage", p.name] == 0.0
        assert 0.7 < acc["strong", p.name] < 0.95 and 0.2 < acc["weak", p.name] < 0.5
    # the letter early in a sentence: the three rule sets disagree
    assert acc["verbose", "vlmevalkit-2025-08"] == 0.0
    assert 0.6 < acc["verbose", "vlmevalkit"] < acc["verbose", "vlmevalkit-2024"]
    # the demo files are VLMEvalKit's prediction TSV: every dataset column but image
    header = files["perfect"].read_text("utf-8").splitlines()[0].split("\t")
    assert header[:3] == ['"index"', '"question"', '"A"'] and header[-1] == '"prediction"'


def test_the_definition_conforms(tmp_path: Path) -> None:
    assert_conforms(BENCHMARK, tmp_path)


def _questions_json(tmp_path: Path) -> Path:
    path = tmp_path / "questions.json"
    rows = [{k: v for k, v in r.items() if k != "answer"} for r in _toy_rows()]
    path.write_text(json.dumps(rows), "utf-8")
    return path


def test_the_importer_reads_vlmevalkits_files(tmp_path: Path) -> None:
    importer = IMPORTERS["vlmevalkit"]
    assert BENCHMARK.importers["vlmevalkit"] is importer
    questions = read_table(TOY.read_bytes(), TOY.name)  # the TSV's rows
    records = importer.to_submission(RESULT.read_bytes(), filename=RESULT.name, questions=questions)
    assert [r["index"] for r in records] == [item["index"] for item in ITEMS]
    assert records[16] == {"index": 17, "prediction": "nan"}  # VLMEvalKit wrote it back so
    assert evaluate(records, TOY, benchmark=SLUG).metrics == {"acc": 0.5}
    wrong = [{**q, "question": "Something else?"} if q["index"] == "5" else q for q in questions]
    with pytest.raises(InvalidSubmissionError, match="index 5"):
        importer.to_submission(PREDICTIONS.read_bytes(), filename="p.xlsx", questions=wrong)
    with pytest.raises(InvalidSubmissionError, match="no such question"):
        importer.to_submission(PREDICTIONS.read_bytes(), filename="p.xlsx", questions=questions[:3])


def test_medvidbench_import_vlmevalkit(tmp_path: Path) -> None:
    out = tmp_path / "submission.json"
    result = CliRunner().invoke(
        app,
        ["import", "vlmevalkit", str(PREDICTIONS), "--benchmark", SLUG,
         "--questions", str(_questions_json(tmp_path)), "-o", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "wrote 22 answers" in result.output
    assert evaluate(out, TOY, benchmark=SLUG).metrics == {"acc": 0.5}


def test_import_reads_the_datasets_own_tsv_as_the_questions(tmp_path: Path) -> None:
    out = tmp_path / "submission.json"
    result = CliRunner().invoke(
        app,
        ["import", "vlmevalkit", str(PREDICTIONS), "--benchmark", SLUG,
         "--questions", str(TOY), "-o", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert evaluate(out, TOY, benchmark=SLUG).metrics == {"acc": 0.5}
    broken = tmp_path / "questions.tsv"
    broken.write_bytes(b"\t".join(b"c%d" % n for n in range(300)) + b"\n")
    result = CliRunner().invoke(
        app,
        ["import", "vlmevalkit", str(PREDICTIONS), "--benchmark", SLUG,
         "--questions", str(broken), "-o", str(out)],
    )  # fmt: skip
    assert result.exit_code != 0 and "more than 256 columns" in result.output


def test_a_json_table_with_pythons_bare_nan_reads_it_as_empty(tmp_path: Path) -> None:
    rows = read_table(
        b'[{"index": 1, "prediction": NaN}, {"index": 2, "prediction": "B"}]', "p.json"
    )
    assert rows == [{"index": 1, "prediction": None}, {"index": 2, "prediction": "B"}]
    with pytest.raises(InvalidSubmissionError, match="not JSON"):
        read_table(b'[{"index": 1, "prediction": Nope}]', "p.json")


def test_the_about_page_facts() -> None:
    shown = BENCHMARK.presentation
    assert "2408.03361" in shown.citation and "Chen, Pengcheng" in shown.citation
    assert shown.licence.startswith("unclear") and "Apache-2.0" in shown.licence
    assert "index" in shown.identity and BENCHMARK.title == "GMAI-MMBench"
    assert BENCHMARK.default_profile == "vlmevalkit"  # the default, no judge
    assert set(BENCHMARK.breakdowns) == {
        "clinical VQA task",
        "department",
        "perceptual granularity",
        "modality",
    }
    assert BENCHMARK.tasks[0].family == "multiple-choice" and BENCHMARK.metrics[0].percent


def test_it_is_registered_through_the_entry_point_group() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    group = project["project"]["entry-points"]["medvidbench.benchmarks"]
    assert group[SLUG] == "medvidbench.benchmarks.gmai_mmbench:BENCHMARK"
    assert benchmarks.get(SLUG) is BENCHMARK


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_the_package_imports_only_the_core() -> None:
    own = "medvidbench.benchmarks.gmai_mmbench"
    package = ROOT / "src" / "medvidbench" / "benchmarks" / "gmai_mmbench"
    modules = sorted(package.glob("*.py"))
    assert len(modules) >= 7
    for module in modules:
        ours = {m for m in _imports(module) if m.startswith("medvidbench")}
        foreign = {m for m in ours if not m.startswith((own, "medvidbench.core"))}
        assert not foreign, f"{module.name} imports {sorted(foreign)}"
