"""Submission validation: every error path with its precise message, and identity matching."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth, load_ground_truth
from medvidbench.benchmarks.medvidbench.matching import load_submission, validate_submission
from medvidbench.core.errors import InvalidSubmissionError
from tests.conftest import gt_record, small_records

IDS = [
    "kcOqlifSukA&&22425&&25124&&1.0",
    "kcOqlifSukA&&22425&&25124&&1.0",
    "VsKw5d-4rq8&&13561&&16184&&1.0",
    "nurvid_1&&22425&&25124&&1.0",
    "nurvid_1&&22425&&25124&&0.5",
]
QA = ["tal", "tal", "stg", "dense_captioning_gpt", "dense_captioning_gemini"]


def preds(texts: list[str] | None = None) -> list[dict[str, Any]]:
    texts = texts or [f"answer {i}" for i in range(5)]
    return [
        {"id": i, "qa_type": q, "prediction": t} for i, q, t in zip(IDS, QA, texts, strict=True)
    ]


def check(data: Any, gt: GroundTruth) -> Any:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return validate_submission(raw, gt).report


def messages(report: Any, code: str) -> list[str]:
    return [p.message for p in report.errors.items if p.code == code]


def test_valid_file_matches_every_sample(small_gt: GroundTruth) -> None:
    result = validate_submission(json.dumps(preds()).encode(), small_gt)
    assert result.report.verdict == "valid"
    assert result.predictions == [f"answer {i}" for i in range(5)]
    assert {t: c.status for t, c in result.report.coverage.items()} == {
        "tal": "complete",
        "stg": "complete",
        "dense_captioning": "complete",
    }


@pytest.mark.parametrize(
    ("raw", "code", "expected"),
    [
        (b"", "empty-file", "the submission is empty"),
        (b"  \n ", "empty-file", "the submission is empty"),
        (
            b'[{"qa_type": "tal",}]',
            "not-json",
            "the submission is not valid JSON: JSON is malformed: trailing comma in object at "
            "line 1, column 20",
        ),
        (
            b"42",
            "wrong-top-level",
            'expected a list of records or an object of records keyed "0", "1", ...; got a number',
        ),
        (
            b'"text"',
            "wrong-top-level",
            'expected a list of records or an object of records keyed "0", "1", ...; got a string',
        ),
        (
            b'{"qa_type": "tal", "prediction": "x", "id": "a"}',
            "single-record",
            'expected a list of records or an object of records keyed "0", "1", ...; got a single '
            "record",
        ),
        (
            b'{"model_name": "m", "aggregated_results": {}}',
            "precomputed-results",
            "pre-computed evaluation results are not accepted: upload the model's predictions and "
            "the scores will be computed here",
        ),
        (
            b"[" * 5000 + b"]" * 5000,
            "too-deep",
            "the submission nests arrays or objects too deeply",
        ),
        (b"[]", "no-records", "the submission contains no records"),
    ],
)
def test_file_level_errors(small_gt: GroundTruth, raw: bytes, code: str, expected: str) -> None:
    report = check(raw, small_gt)
    assert report.verdict == "invalid"
    assert messages(report, code) == [expected]


@pytest.mark.parametrize(
    ("change", "code", "expected"),
    [
        (
            lambda r: r.update(prediction=None),
            "wrong-type",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): expected field 'prediction' to be a "
            "string, got null",
        ),
        (
            lambda r: r.update(qa_type=3),
            "wrong-type",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): expected field 'qa_type' to be a "
            "string, got a number",
        ),
        (
            lambda r: r.update(index="4"),
            "wrong-type",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): expected field 'index' to be an "
            "integer, got a string",
        ),
        (
            lambda r: r.update(index=True),
            "wrong-type",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): expected field 'index' to be an "
            "integer, got a boolean",
        ),
        (
            lambda r: r.pop("qa_type"),
            "missing-field",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): missing field 'qa_type'",
        ),
        (
            lambda r: r.pop("prediction"),
            "missing-field",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): missing field 'prediction' (or "
            "'answer' in the results.json format)",
        ),
        (
            lambda r: r.pop("id"),
            "missing-field",
            "record 1: missing field 'id' (or 'metadata' in the results.json format)",
        ),
        (
            lambda r: r.update(id=17),
            "wrong-type",
            "record 1: expected field 'id' to be a string, got a number",
        ),
        (
            lambda r: r.update(qa_type="dc"),
            "unknown-qa-type",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): unknown qa_type 'dc'; expected one of "
            "tal, stg, next_action, dense_captioning, video_summary, region_caption, "
            "skill_assessment, cvs_assessment (with a variant suffix such as _gpt where the test "
            "set has one)",
        ),
        (
            lambda r: r.update(index=-1),
            "bad-index",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): expected 'index' to be 0 or more, got -1",
        ),
        (
            lambda r: r.update(index=99),
            "bad-index",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): index 99 is past the last sample (4)",
        ),
        (
            lambda r: r.update(index=2),
            "index-mismatch",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): index 2 is sample "
            "'VsKw5d-4rq8&&13561&&16184&&1.0' (stg), but the record says "
            "'kcOqlifSukA&&22425&&25124&&1.0' (tal)",
        ),
        (
            lambda r: r.update(id="nope&&1&&2&&1.0"),
            "unmatched",
            "record 1 (id 'nope&&1&&2&&1.0'): id 'nope&&1&&2&&1.0' matches no sample of the test set",
        ),
        (
            lambda r: r.update(qa_type="next_action"),
            "unmatched",
            "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): the test set has no 'next_action' "
            "question for this id (it has tal)",
        ),
    ],
)
def test_record_level_errors(small_gt: GroundTruth, change: Any, code: str, expected: str) -> None:
    records = preds()
    change(records[1])
    report = check(records, small_gt)
    assert report.verdict == "invalid"
    assert expected in messages(report, code)


def test_record_that_is_not_an_object(small_gt: GroundTruth) -> None:
    records: list[Any] = preds()
    records[2] = ["not", "an", "object"]
    assert messages(check(records, small_gt), "wrong-type") == [
        "record 2: expected an object, got list"
    ]


def test_every_problem_is_reported_not_just_the_first(small_gt: GroundTruth) -> None:
    records = preds()
    records[0]["prediction"] = None
    records[2]["qa_type"] = "bogus"
    records[4].pop("id")
    report = check(records, small_gt)
    assert report.errors.totals["wrong-type"] == 1
    assert report.errors.totals["unknown-qa-type"] == 1
    assert report.errors.totals["missing-field"] == 1


def test_a_runaway_answer_is_refused_with_its_length(small_gt: GroundTruth) -> None:
    records = preds()
    records[1]["prediction"] = "0.0-1.0 seconds, " * 2_000
    assert messages(check(records, small_gt), "answer-too-long") == [
        "record 1 (id 'kcOqlifSukA&&22425&&25124&&1.0'): the answer is 34,000 characters long, "
        "over the limit of 32,768; truncate it"
    ]
    records[1]["prediction"] = "0.0-1.0 seconds, " * 1_900  # 32,300: under the limit
    assert check(records, small_gt).ok


def test_duplicate_prediction_for_one_sample(small_gt: GroundTruth) -> None:
    records = [*preds(), dict(preds()[2])]
    report = check(records, small_gt)
    assert messages(report, "duplicate") == [
        "record 5 (id 'VsKw5d-4rq8&&13561&&16184&&1.0'): a second prediction for sample 2 "
        "('VsKw5d-4rq8&&13561&&16184&&1.0', stg), already given by record 2"
    ]


def test_more_predictions_than_questions_about_a_clip(small_gt: GroundTruth) -> None:
    records = [*preds(), dict(preds()[0])]
    assert messages(check(records, small_gt), "duplicate") == [
        "record 5 (id 'kcOqlifSukA&&22425&&25124&&1.0'): more predictions for qa_type 'tal' than "
        "the test set has samples with this id (2)"
    ]


def test_task_with_some_samples_missing_is_invalid(small_gt: GroundTruth) -> None:
    report = check(preds()[1:], small_gt)
    assert report.verdict == "invalid"
    assert report.coverage["tal"].status == "incomplete"
    assert messages(report, "incomplete-task") == [
        "task 'tal': 1 of 2 samples have a prediction; 1 missing, e.g. samples 1 "
        "('kcOqlifSukA&&22425&&25124&&1.0'). Predict every sample of a task, or leave the task "
        "out entirely (a partial submission)."
    ]
    assert messages(report, "missing-prediction") == [
        "task 'tal': no prediction for sample 1 (id 'kcOqlifSukA&&22425&&25124&&1.0', qa_type tal)"
    ]


def test_whole_task_missing_is_a_partial_submission(small_gt: GroundTruth) -> None:
    report = check(preds()[:3], small_gt)
    assert report.verdict == "partial"
    assert report.ok and not report.complete
    assert report.missing_tasks == ["dense_captioning"]


def test_nothing_matched(small_gt: GroundTruth) -> None:
    records = [{"id": f"x{i}", "qa_type": "tal", "prediction": ""} for i in range(3)]
    report = check(records, small_gt)
    assert report.errors.totals["unmatched"] == 3
    assert report.matched == 0


def test_far_too_many_records_are_refused_early(small_gt: GroundTruth) -> None:
    records = preds() * 300
    assert messages(check(records, small_gt), "too-many-records") == [
        "the submission has 1,500 records; the test set has 5 samples"
    ]


def test_shuffled_file_with_index_fields_matches_like_an_ordered_one(small_gt: GroundTruth) -> None:
    records = preds()
    for i, r in enumerate(records):
        r["index"] = i
    random.Random(3).shuffle(records)
    records.reverse()
    result = validate_submission(json.dumps(records).encode(), small_gt)
    assert result.report.verdict == "valid"
    assert result.predictions == [f"answer {i}" for i in range(5)]


def test_order_within_a_clip_decides_without_index(small_gt: GroundTruth) -> None:
    records = preds()
    records = [records[1], records[4], records[0], records[3], records[2]]
    result = validate_submission(json.dumps(records).encode(), small_gt)
    assert result.predictions == ["answer 1", "answer 0", "answer 2", "answer 3", "answer 4"]
    assert result.report.order_only == {"tal": 2}
    assert result.report.warnings.items[0].message.startswith(
        "task 'tal': 2 predictions were matched to their test question by order alone"
    )


def test_results_json_dict_format_is_matched_by_question(small_gt: GroundTruth) -> None:
    raw = small_records()
    results = {}
    for n, i in enumerate([1, 0, 4, 2, 3]):  # reordered, keys renumbered like merged GPU files
        rec = raw[i]
        results[str(n)] = {
            "metadata": rec["metadata"],
            "qa_type": rec["qa_type"],
            "question": rec["conversations"][0]["value"],
            "answer": f"answer {i}",
            "gnd": "a submitter's own answer",
            "struc_info": [{"spans": []}],
        }
    result = validate_submission(json.dumps(results).encode(), small_gt)
    assert result.report.verdict == "valid"
    assert result.report.layout == "dict"
    assert result.predictions == [f"answer {i}" for i in range(5)]
    assert any("'gnd' is ignored" in n for n in result.report.notices)


def test_uploaded_ground_truth_is_never_used(small_gt: GroundTruth) -> None:
    records = preds(["", "", "", "", ""])
    for r in records:
        r["gnd"] = r["ground_truth"] = "1.0-2.0 seconds."
        r["struc_info"] = [{"spans": [{"start": 1, "end": 2}]}]
    result = validate_submission(json.dumps(records).encode(), small_gt)
    assert result.predictions == [""] * 5
    assert len(result.report.notices) == 3


def test_readme_format_one_uses_response(small_gt: GroundTruth) -> None:
    records = [
        {"id": r["id"], "qa_type": r["qa_type"], "response": r["prediction"], "ground_truth": "x"}
        for r in preds()
    ]
    result = validate_submission(json.dumps(records).encode(), small_gt)
    assert result.report.verdict == "valid"
    assert result.predictions[0] == "answer 0"


def test_jsonl_with_a_broken_line(small_gt: GroundTruth) -> None:
    lines = [json.dumps(r) for r in preds()]
    lines[3] = '{"id": "nurvid_1&&22425&&25124&&1.0", "qa_type": '
    report = validate_submission("\n".join(lines).encode(), small_gt, name="p.jsonl").report
    assert report.layout == "jsonl"
    assert messages(report, "not-json")[0].startswith("line 4 is not valid JSON")


def test_jsonl_valid_and_with_bad_fields(small_gt: GroundTruth) -> None:
    lines = [json.dumps(r) for r in preds()]
    ok = validate_submission("\n".join(lines).encode() + b"\n", small_gt, name="p.jsonl")
    assert ok.report.verdict == "valid"
    lines[2] = json.dumps({**preds()[2], "prediction": 5})
    bad = validate_submission("\n".join(lines).encode(), small_gt, name="p.jsonl").report
    assert messages(bad, "wrong-type") == [
        "line 3 (id 'VsKw5d-4rq8&&13561&&16184&&1.0'): expected field 'prediction' to be a "
        "string, got a number"
    ]


def test_jsonl_is_detected_without_the_extension(small_gt: GroundTruth) -> None:
    data = "\n".join(json.dumps(r) for r in preds()).encode()
    assert validate_submission(data, small_gt).report.layout == "jsonl"


def test_byte_order_mark_is_accepted(small_gt: GroundTruth) -> None:
    data = b"\xef\xbb\xbf" + json.dumps(preds()).encode()
    assert check(data, small_gt).verdict == "valid"


def test_bare_task_name_resolves_when_unambiguous(small_gt: GroundTruth) -> None:
    records = preds()
    records[3]["qa_type"] = "dense_captioning"
    assert check(records, small_gt).verdict == "valid"


def test_bare_task_name_is_ambiguous_when_a_clip_has_both_variants() -> None:
    gt = load_ground_truth(
        json.dumps(
            [
                gt_record(video_id="n", qa_type="video_summary_gpt", data_source="NurViD"),
                gt_record(video_id="n", qa_type="video_summary_gemini", data_source="NurViD"),
            ]
        ).encode()
    )
    sid = "n&&22425&&25124&&1.0"
    report = check([{"id": sid, "qa_type": "video_summary", "prediction": "x"}] * 2, gt)
    assert messages(report, "unmatched")[0] == (
        f"record 0 (id '{sid}'): qa_type 'video_summary' is ambiguous for this id; use one of "
        "video_summary_gpt, video_summary_gemini"
    )


def test_load_submission_raises_with_every_problem(small_gt: GroundTruth) -> None:
    records = preds()
    records[0]["prediction"] = None
    records[1]["prediction"] = None
    with pytest.raises(InvalidSubmissionError) as info:
        load_submission(json.dumps(records).encode(), small_gt, name="p.json")
    assert info.value.http_status == 422
    assert "invalid submission 'p.json': record 0" in info.value.message
    assert len(info.value.to_dict()["problems"]) >= 2


def test_huge_error_lists_are_capped_but_counted(small_gt: GroundTruth) -> None:
    records = [{"qa_type": 1} for _ in range(400)]
    report = check(records, small_gt)
    assert len(report.errors.items) <= 150
    assert report.errors.totals["wrong-type"] == 400
