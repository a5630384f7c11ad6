"""MedFrameQA, a built-in benchmark scored as its official script scores.

The official vectors (tests/data/medframeqa/vectors.json) are the outputs of the official code,
github.com/haojinw0027/MedFrameQA at commit e83fbe3b97a3297beebc997108469bd73b535d0d
(``src/eval_process.py``: ``parse_multi_choice_response`` on 71 answers, then ``evaluate()`` with
the API stubbed and ``compute_accuracy()`` on 16 questions), run by a colleague on inputs they
wrote. Every parse vector is reproduced exactly; the aggregate run is reproduced exactly on the
questions its results file holds, and the one documented difference (every test question
counts) is checked on the question it left out.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from medvidbench import benchmarks
from medvidbench.benchmarks.medframeqa import ARCHETYPES, BENCHMARK
from medvidbench.benchmarks.medframeqa import synth as mfqa_synth
from medvidbench.benchmarks.medframeqa.parser import (
    official_letter,
    option_texts,
    read_official,
    read_tolerant,
)
from medvidbench.benchmarks.medframeqa.scoring import official_summary
from medvidbench.benchmarks.medframeqa.testset import LETTERS
from medvidbench.core.errors import InvalidGroundTruthError
from medvidbench.library import evaluate
from medvidbench.testing import assert_conforms

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "medvidbench" / "benchmarks" / "medframeqa"
VECTORS = json.loads((ROOT / "tests" / "data" / "medframeqa" / "vectors.json").read_text())
COMMIT = "e83fbe3b97a3297beebc997108469bd73b535d0d"
PARSE = [v for v in VECTORS["parse"] if v["answer"] is not None]
AGGREGATE = VECTORS["aggregate"]
FIVE = ["Acute appendicitis", "Pulmonary embolism", "Community-acquired pneumonia"]
FIVE += ["Diverticulitis", "Fibroadenoma"]


def test_the_vectors_come_from_the_commit_the_docs_name() -> None:
    assert VECTORS["commit"] == COMMIT and len(VECTORS["parse"]) == 71
    assert COMMIT in (ROOT / "docs" / "benchmarks" / "medframeqa.md").read_text()


@pytest.mark.parametrize("vector", PARSE, ids=[v["id"] for v in PARSE])
def test_every_official_parse_vector(vector: dict[str, Any]) -> None:
    options = vector["options"]
    # the letters and the cut option texts are the official script's own
    assert list(LETTERS[: len(options)]) == vector["all_choices"]
    assert option_texts(options) == vector["index2ans"]
    assert official_letter(vector["answer"], options) == vector["expected"], vector["note"]
    # tolerant never changes a letter the official parser reads
    if vector["expected"]:
        assert read_tolerant(vector["answer"], options).letter == vector["expected"]


def test_an_answer_that_is_not_text_is_a_located_error_not_a_crash() -> None:
    """The official parser raises TypeError on None (vector none_input); here such a record
    never reaches it: the matcher reports it."""
    [none] = [v for v in VECTORS["parse"] if v["answer"] is None]
    assert none["id"] == "none_input" and none["expected"] is None
    gt = BENCHMARK.load_ground_truth(json.dumps([_record("q1", "A")]).encode())
    sent = [{"cot_reasoning": None, "answer": "", "question_id": "q1", "correct_answer": "A"}]
    [problem] = BENCHMARK.validate_submission(json.dumps(sent).encode(), gt).report.errors.items
    assert problem.code == "wrong-type" and "record 0 (id 'q1')" in problem.message


@pytest.mark.parametrize(
    ("text", "official", "tolerant", "rule"),
    [
        ("B", "", "B", "tolerant"),  # a bare letter: never read officially
        ("The answer is C.", "", "C", "tolerant"),
        ("answer: (d)", "", "D", "tolerant"),
        ("Answer: CT shows D", "C", "C", "marker"),  # tolerant keeps the official reading
        ("(C) is tempting but the answer is (A)", "A", "A", "parenthesis"),
        ("I cannot tell", "", "", "none"),
    ],
)
def test_the_tolerant_variant_only_reads_what_the_official_parser_gives_up_on(
    text: str, official: str, tolerant: str, rule: str
) -> None:
    assert read_official(text, FIVE).letter == official
    assert read_tolerant(text, FIVE).letter == tolerant
    assert read_tolerant(text, FIVE).rule == rule


# --- the official aggregate run -------------------------------------------------------------


def _test_set(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The aggregate run's questions in the real test-set format."""
    return [
        {
            "question_id": it["question_id"],
            "system": it["system"],
            "organ": it["organ"],
            "keyword": "k",
            "modality": it["modality"],
            "video_id": f"v-{it['question_id']}",
            "question": "Synthetic question?",
            "options": it["options"],
            "correct_answer": it["correct_answer"],
            **{
                f"image_{k}": f"/x/{it['question_id']}_{k}.png" if k <= it["n_frames"] else None
                for k in range(1, 6)
            },
        }
        for it in items
    ]


def _official_file() -> bytes:
    return json.dumps(AGGREGATE["expected"]["official_result_records"], indent=4).encode()


def test_the_official_aggregate_run_is_reproduced_on_the_questions_its_file_holds() -> None:
    present = [it for it in AGGREGATE["items"] if it["in_official_result_file"]]
    gt = BENCHMARK.load_ground_truth(json.dumps(_test_set(present)).encode())
    report = evaluate(_official_file(), gt, "official", benchmark="medframeqa")
    expected = AGGREGATE["expected"]["official_summary_json"]
    assert expected == {"accuracy": "60.00%", "correct": 9, "total": 15}
    assert report.per_task["frameqa"]["official_summary"] == expected
    assert report.metrics == {"accuracy": pytest.approx(9 / 15)}
    # each question right or wrong as the official run found it
    assert report.submission["warnings"] == []  # every file letter is what we read again
    derived = AGGREGATE["expected"]["derived_per_category_NOT_OFFICIAL"]
    for ours, theirs in (("system", "system"), ("organ", "organ"), ("modality", "modality")):
        _same_groups(report.per_group[ours], derived[theirs])
    _same_groups(report.per_group["frames"], derived["n_frames"])


def _same_groups(ours: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]]) -> None:
    assert set(ours) == set(theirs)
    for group, summary in theirs.items():
        correct = round(ours[group]["accuracy"] * ours[group]["items"])
        assert official_summary(correct, ours[group]["items"]) == summary, group


def test_each_question_is_read_and_judged_as_the_official_run_did() -> None:
    for it in AGGREGATE["items"]:
        letter = official_letter(it["response"], it["options"])
        if it["in_official_result_file"]:
            assert letter == it["official_parsed_answer"], it["question_id"]
            assert (letter == it["correct_answer"]) == it["official_correct"]
        else:  # the empty output the official run dropped: here it is wrong, never absent
            assert it["response"] == "" and letter == ""


def test_the_official_file_lacking_a_question_is_refused_as_incomplete() -> None:
    """The official run dropped q09 (empty output) and divided by 15; every question counts
    here: the file is incomplete until q09 is answered, and then it is 9 of 16."""
    gt = BENCHMARK.load_ground_truth(json.dumps(_test_set(AGGREGATE["items"])).encode())
    matched = BENCHMARK.validate_submission(_official_file(), gt)
    [problem] = matched.report.errors.items
    assert problem.code == "incomplete-task" and "15 of 16" in problem.message
    assert "'q09'" in problem.message and '"cot_reasoning": ""' in problem.message
    assert matched.report.coverage["frameqa"].status == "incomplete"
    records = [*AGGREGATE["expected"]["official_result_records"]]
    records.append({"cot_reasoning": "", "answer": "", "question_id": "q09", "correct_answer": "E"})
    report = evaluate(records, gt, benchmark="medframeqa")
    assert report.metrics["accuracy"] == pytest.approx(9 / 16)
    assert report.per_task["frameqa"]["official_summary"]["total"] == 16
    assert report.per_group["system"]["digestive_system"]["items"] == 5  # q09 counts there


def test_what_compute_accuracy_trusts_is_never_trusted_here() -> None:
    """The official edge run (6 records, 2 counted right) took each record's parsed 'answer'
    and 'correct_answer' as written; here the raw 'cot_reasoning' is read again against this
    test set's key, so only e1 is right, and each disagreement is a warning."""
    edge = AGGREGATE["compute_accuracy_edge_cases"]
    assert edge["expected_summary_json"] == {"accuracy": "33.33%", "correct": 2, "total": 6}
    records = edge["result_records"]
    # e6's key, 'D. Lipoma', is no option letter: such a test set is refused
    with pytest.raises(InvalidGroundTruthError) as err:
        BENCHMARK.load_ground_truth(json.dumps([_record("e6", "D. Lipoma")]).encode())
    assert [p.code for p in err.value.problems.items] == ["bad-answer"]
    keys = {"e1": "A", "e2": "A", "e3": "B", "e4": "C", "e5": "C"}
    gt = BENCHMARK.load_ground_truth(json.dumps([_record(q, k) for q, k in keys.items()]).encode())
    sent = [r for r in records if r["question_id"] in keys]
    report = evaluate(sent, gt, benchmark="medframeqa")
    assert report.per_task["frameqa"]["official_summary"] == official_summary(1, 5)
    warned = {w["code"]: w["message"] for w in report.submission["warnings"]}
    assert set(warned) == {"answer-disagrees", "raw-response"}
    assert warned["answer-disagrees"].startswith("3 records")  # e2, e3, e5 claim a letter
    assert "'e2'" in warned["raw-response"] and "'e3'" not in warned["raw-response"]


# --- the test set ---------------------------------------------------------------------------


def _record(qid: str | int, key: str, **changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "question_id": qid,
        "system": "respiratory_system",
        "organ": "lung",
        "keyword": "pneumonia",
        "modality": "CT",
        "video_id": "vid1",
        "question": "Which diagnosis fits both frames?",
        "options": FIVE,
        "correct_answer": key,
        "image_1": f"{qid}_1.png",
        "image_2": f"{qid}_2.png",
        "image_3": None,
        "image_4": None,
        "image_5": None,
    }
    record.update(changes)
    return {k: v for k, v in record.items() if v is not ...}


@pytest.mark.parametrize(
    ("changes", "code", "says"),
    [
        ({"organ": ...}, "missing-field", "record 1: missing field 'organ'"),
        ({"modality": 3}, "wrong-type", "expected field 'modality' to be a string, got a number"),
        ({"question_id": ...}, "missing-field", "expected field 'question_id'"),
        ({"options": ["only one"]}, "bad-options", "options must be 2-26 non-empty texts"),
        ({"options": ["x", ""]}, "bad-options", "non-empty"),
        ({"correct_answer": "F"}, "bad-answer", "not one of the option letters A-E"),
        ({"correct_answer": "b"}, "bad-answer", "'b'"),
        ({"correct_answer": ...}, "missing-field", "'correct_answer' (or 'answer')"),
        ({"image_1": None}, "bad-frames", "without gaps"),
        ({"image_2": {"bytes": "..."}}, "bad-frames", "image_2 must be a path"),
        ({"image_1": None, "image_2": None}, "bad-frames", "image_1 ... image_N"),
    ],
)
def test_a_broken_test_set_record_is_refused_with_its_location(
    changes: dict[str, Any], code: str, says: str
) -> None:
    records = [_record("q0", "A"), _record("q1", "B", **changes)]
    with pytest.raises(InvalidGroundTruthError) as err:
        BENCHMARK.load_ground_truth(json.dumps(records).encode())
    [problem] = err.value.problems.items
    assert problem.code == code and says in problem.message and problem.record == 1
    assert problem.message.startswith("record 1: ")


def test_every_problem_of_a_test_set_is_listed() -> None:
    records = [
        _record("q0", "A", organ=..., modality=...),
        "not a record",
        _record("q0", "A"),
        _record("q0", "B"),  # repeats q0
    ]
    with pytest.raises(InvalidGroundTruthError) as err:
        BENCHMARK.load_ground_truth(json.dumps(records).encode())
    found = [(p.code, p.record) for p in err.value.problems.items]
    assert found == [
        ("missing-field", 0),
        ("missing-field", 0),
        ("wrong-type", 1),
        ("duplicate-id", 3),
    ]
    with pytest.raises(InvalidGroundTruthError, match="not valid JSON"):
        BENCHMARK.load_ground_truth(b"[{")


def test_the_key_field_may_be_answer_or_correct_answer_and_correct_answer_wins() -> None:
    only_answer = {**_record("q1", "A", correct_answer=...), "answer": "C"}
    both = {**_record("q2", "B"), "answer": "D"}  # they disagree: correct_answer wins
    same = {**_record("q3", "E"), "answer": "E"}
    gt = BENCHMARK.load_ground_truth(json.dumps([only_answer, both, same]).encode())
    assert [q.answer for q in gt.samples] == ["C", "B", "E"]
    [warning] = gt.warnings.items
    assert warning.code == "key-disagrees" and warning.record == 1


def test_json_lines_and_the_official_scripts_image_path_are_read() -> None:
    first = _record("q1", "A")
    second = {
        **_record("q2", "B", image_1=..., image_2=..., image_3=..., image_4=..., image_5=...),
        "image_path": ["a.png", "b.png", "c.png"],
        "reasoning_chain": "ignored",
    }
    lines = "\n".join(json.dumps(r) for r in (first, second)).encode()
    gt = BENCHMARK.load_ground_truth(lines)
    assert [q.frames for q in gt.samples] == [("q1_1.png", "q1_2.png"), ("a.png", "b.png", "c.png")]
    assert gt.samples[1].letters == "ABCDE" and gt.samples[0].system == "respiratory_system"
    numbered = BENCHMARK.load_ground_truth(json.dumps([_record(7, "A")]).encode())
    assert numbered.samples[0].sample_id == "7"


# --- submissions ----------------------------------------------------------------------------


@pytest.fixture
def three() -> Any:
    records = [_record("q1", "B"), _record("q2", "D"), _record("q3", "A", system="digestive")]
    return BENCHMARK.load_ground_truth(json.dumps(records).encode())


def test_the_official_results_file_is_read_again_from_its_raw_answers(three: Any) -> None:
    sent = [  # completion order; the file's own 'answer' and 'correct_answer' are ignored
        {"cot_reasoning": "Answer: A", "answer": "A", "question_id": "q3", "correct_answer": "A"},
        {"cot_reasoning": "Answer: B", "answer": "D", "question_id": "q1", "correct_answer": "D"},
        {"cot_reasoning": "(D)", "answer": "D", "question_id": "q2", "correct_answer": "B"},
    ]
    report = evaluate(sent, three, benchmark="medframeqa")
    assert report.metrics == {"accuracy": 1.0}  # q1 read as B from its text, scored on our key
    assert report.per_dataset["digestive"]["accuracy"] == 1.0
    warned = {w["code"]: w["message"] for w in report.submission["warnings"]}
    assert "'q1': 'D' in the file, 'B' read" in warned["answer-disagrees"]
    assert set(warned) == {"answer-disagrees", "key-disagrees"}
    assert "'q1': 'D', key 'B'" in warned["key-disagrees"]
    assert "'q2': 'B', key 'D'" in warned["key-disagrees"]


def test_the_simple_format_with_question_id_or_id(three: Any) -> None:
    sent = [
        {"id": "q2", "prediction": "\\boxed{D}"},
        {"question_id": "q1", "prediction": "B"},  # a bare letter: the official parser reads none
        {"question_id": "q3", "id": "q3", "prediction": "Answer: A"},
    ]
    official = evaluate(sent, three, "official", benchmark="medframeqa")
    assert official.metrics["accuracy"] == pytest.approx(2 / 3)
    assert official.per_task["frameqa"]["parse_rate"] == pytest.approx(2 / 3)
    assert evaluate(sent, three, "tolerant", benchmark="medframeqa").metrics == {"accuracy": 1.0}


def test_a_broken_prediction_file_is_reported_with_locations_never_raised(three: Any) -> None:
    sent = [
        {"question_id": "q9", "prediction": "A"},
        {"question_id": "q1", "prediction": 3},
        {"question_id": "q1", "id": "q2", "prediction": "A"},
        {"cot_reasoning": "A", "prediction": "A", "question_id": "q2"},
        {"question_id": "q2"},
        {"question_id": "q3", "prediction": "(A)"},
        {"id": "q3", "prediction": "(A)"},
        "q1",
    ]
    matched = BENCHMARK.validate_submission(json.dumps(sent).encode(), three)
    found = [(p.code, p.record) for p in matched.report.errors.items]
    assert found == [
        ("no-such-item", 0),
        ("wrong-type", 1),
        ("missing-field", 2),
        ("ambiguous", 3),
        ("missing-field", 4),
        ("duplicate", 6),
        ("wrong-type", 7),
        ("incomplete-task", None),  # the kernel's: q1 and q2 have no prediction
    ]
    assert "record 1 (id 'q1'): expected field 'prediction' to be a string, got int" in str(
        matched.report.errors.items[1].message
    )
    for data in (b"", b"{", b'{"question_id": "q1", "prediction": "A"}'):
        assert not BENCHMARK.validate_submission(data, three).report.ok


def test_a_file_missing_a_question_is_refused_by_the_kernel(three: Any) -> None:
    sent = [{"id": "q1", "prediction": "(B)"}, {"id": "q2", "prediction": "(D)"}]
    matched = BENCHMARK.validate_submission(json.dumps(sent).encode(), three)
    assert [p.code for p in matched.report.errors.items] == ["incomplete-task"]
    assert "'q3'" in matched.report.errors.items[0].message
    nothing = BENCHMARK.validate_submission(b"[]", three)
    assert [p.code for p in nothing.report.errors.items] == ["no-predictions"]


def test_a_long_chain_of_thought_is_read_whole_up_to_the_kernels_bound(three: Any) -> None:
    """The letter is on the last line: an answer is never cut to its first characters."""
    long = "The frames show x. " * 1_700 + "Answer: B"  # about 32,000 characters
    sent = [{"id": q, "prediction": long} for q in ("q1", "q2", "q3")]
    matched = BENCHMARK.validate_submission(json.dumps(sent).encode(), three)
    assert matched.report.ok and "answer-cut" not in matched.report.warnings.totals
    report = evaluate(matched, three, benchmark="medframeqa")
    assert report.metrics["accuracy"] == pytest.approx(1 / 3)  # q1's key is B
    sent[0]["prediction"] = long + " " * 1_000  # over 32,768: refused, located
    refused = BENCHMARK.validate_submission(json.dumps(sent).encode(), three)
    problem = refused.report.errors.items[0]
    assert problem.code == "answer-too-long" and problem.message.startswith("record 0 (id 'q1')")
    assert not refused.report.ok


# --- the definition, the demo data, the command line ----------------------------------------


def test_the_definition_conforms(tmp_path: Path) -> None:
    assert_conforms(BENCHMARK, tmp_path)


def test_the_demo_archetypes_behave_as_documented(tmp_path: Path) -> None:
    assert BENCHMARK.demo is not None and mfqa_synth.ARCHETYPES == ARCHETYPES
    files = BENCHMARK.demo.synthesise(tmp_path, None, 2)
    gt = BENCHMARK.load_ground_truth(files["ground_truth"])
    assert len(gt) == 300 and len({q.dataset for q in gt.samples}) == 5
    assert {len(q.frames) for q in gt.samples} == {2, 3, 4, 5}
    assert {len(q.options) for q in gt.samples} == {4, 5, 6}
    assert len({q.video_id for q in gt.samples}) < 300  # several questions per video
    assert len({q.modality for q in gt.samples}) == 5
    acc = {
        (a, p): evaluate(files[a], gt, p, benchmark="medframeqa").metrics["accuracy"]
        for a in ARCHETYPES
        for p in ("official", "tolerant")
    }
    assert acc["perfect", "official"] == acc["perfect", "tolerant"] == 1.0
    assert 0.6 < acc["strong", "official"] < acc["strong", "tolerant"] < 0.9
    assert 0.2 < acc["weak", "official"] == acc["weak", "tolerant"] < 0.5
    assert acc["terse", "official"] < 0.5 < 0.7 < acc["terse", "tolerant"]
    assert acc["garbage", "official"] == acc["garbage", "tolerant"] == 0.0
    official = json.loads(files["perfect"].read_text())
    assert set(official[0]) == {"cot_reasoning", "answer", "question_id", "correct_answer"}
    assert [r["question_id"] for r in official] != [q.sample_id for q in gt.samples]  # shuffled
    assert set(json.loads(files["terse"].read_text())[0]) == {"id", "prediction"}


def test_reports_break_accuracy_down_by_system_organ_modality_and_frames(tmp_path: Path) -> None:
    assert BENCHMARK.demo is not None
    files = BENCHMARK.demo.synthesise(tmp_path, 120, 5)
    gt = BENCHMARK.load_ground_truth(files["ground_truth"])
    report = evaluate(files["strong"], gt, benchmark="medframeqa")
    assert set(report.per_group) == {"system", "organ", "modality", "frames"}
    for name, groups in report.per_group.items():
        assert sum(g["items"] for g in groups.values()) == 120, name
        weighted = sum(g["accuracy"] * g["items"] for g in groups.values()) / 120
        assert weighted == pytest.approx(report.metrics["accuracy"], abs=1e-12), name
    for system, values in report.per_group["system"].items():
        assert values["accuracy"] == pytest.approx(report.per_dataset[system]["accuracy"])
    lungs = [q.index for q in gt.samples if q.organ == "lung"]
    right = sum(r.values["accuracy"] for r in _samples(files["strong"], gt) if r.index in lungs)
    assert report.per_group["organ"]["lung"]["accuracy"] == pytest.approx(right / len(lungs))


def _samples(path: Path, gt: Any) -> list[Any]:
    from medvidbench.core.scoring import Context

    matched = BENCHMARK.validate_submission(path, gt)
    scorer = BENCHMARK.scorers()["frameqa"]
    return scorer.score_all(gt.samples, matched.predictions, BENCHMARK.profile(), Context())


def test_the_perfect_archetype_scores_100_through_the_command_line(tmp_path: Path) -> None:
    assert BENCHMARK.demo is not None
    files = BENCHMARK.demo.synthesise(tmp_path / "demo", 200, 0)
    out = tmp_path / "report.json"
    args = ["--benchmark", "medframeqa", "--ground-truth", str(files["ground_truth"])]
    run = subprocess.run(
        [sys.executable, "-m", "medvidbench", "evaluate", str(files["perfect"]), *args,
         "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert report["benchmark"] == "medframeqa" and report["metrics"] == {"accuracy": 1.0}
    assert report["profile"] == "official"
    records = json.loads(files["perfect"].read_text())
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(records[:-1]))
    refused = subprocess.run(
        [sys.executable, "-m", "medvidbench", "evaluate", str(partial), *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 4 and "199 of 200" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_it_is_registered_through_the_entry_point_group_like_the_built_ins() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    group = project["project"]["entry-points"]["medvidbench.benchmarks"]
    assert group["medframeqa"] == "medvidbench.benchmarks.medframeqa:BENCHMARK"
    assert benchmarks.get("medframeqa") is BENCHMARK


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_the_package_imports_only_itself_and_the_core() -> None:
    own = "medvidbench.benchmarks.medframeqa"
    for module in PACKAGE.glob("*.py"):
        ours = {m for m in _imports(module) if m.startswith("medvidbench")}
        foreign = {m for m in ours if not m.startswith((own, "medvidbench.core"))}
        assert not foreign, f"{module.name} imports {sorted(foreign)}: only the contract may"
