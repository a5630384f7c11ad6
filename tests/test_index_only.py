"""Records keyed by ``index`` alone (what ``medvidbench import`` writes without a questions
file): accepted against a known test set, and every other record still needs its identity."""

from __future__ import annotations

import json
import random
from pathlib import Path

from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth
from medvidbench.benchmarks.medvidbench.matching import validate_submission
from medvidbench.library import evaluate


def test_index_only_records_score_like_the_full_ones(
    synthetic: dict[str, Path], synthetic_gt: GroundTruth
) -> None:
    full = json.loads(synthetic["strong"].read_text())
    bare = [{"index": i, "prediction": r["prediction"]} for i, r in enumerate(full)]
    random.Random(1).shuffle(bare)
    report = validate_submission(json.dumps(bare).encode(), synthetic_gt).report
    assert report.ok and report.complete, report.errors.items[:3]
    assert evaluate(json.dumps(bare).encode(), synthetic_gt).metrics == (
        evaluate(synthetic["strong"], synthetic_gt).metrics
    )


def test_an_index_with_a_contradicting_identity_is_refused(small_gt: GroundTruth) -> None:
    records = [{"index": 2, "qa_type": "tal", "prediction": "x"}]  # sample 2 is an STG question
    report = validate_submission(json.dumps(records).encode(), small_gt).report
    assert [p.code for p in report.errors.items] == ["index-mismatch"]


def test_without_an_index_the_identity_is_still_required(small_gt: GroundTruth) -> None:
    for record, message in (
        ({"prediction": "x"}, "record 0: missing field 'qa_type'"),
        ({"qa_type": "tal", "prediction": "x"}, "record 0: missing field 'id'"),
        ({"id": "kcOqlifSukA&&22425&&25124&&1.0", "prediction": "x"}, "missing field 'qa_type'"),
    ):
        report = validate_submission(json.dumps([record]).encode(), small_gt).report
        assert any(message in p.message for p in report.errors.items), report.errors.items
    past = validate_submission(b'[{"index": 5, "prediction": "x"}]', small_gt).report
    assert "index 5 is past the last sample (4)" in past.errors.items[0].message
