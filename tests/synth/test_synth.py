"""The synthetic MedVidBench: real formats, published proportions, determinism, verdicts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth, load_ground_truth
from medvidbench.benchmarks.medvidbench.matching import validate_submission
from medvidbench.benchmarks.medvidbench.synth import (
    ARCHETYPES,
    generate_ground_truth,
    generate_predictions,
    variant_counts,
)
from medvidbench.benchmarks.medvidbench.tasks.registry import VARIANT_TEST_COUNTS


def test_default_size_has_the_published_counts() -> None:
    assert variant_counts(6245) == VARIANT_TEST_COUNTS


@pytest.mark.parametrize("n", [11, 100, 999, 6245, 531_850])
def test_counts_add_up_and_cover_every_variant(n: int) -> None:
    counts = variant_counts(n)
    assert sum(counts.values()) == n
    assert all(c >= 1 for c in counts.values())


def test_generation_is_deterministic_per_seed() -> None:
    assert generate_ground_truth(200, 1) == generate_ground_truth(200, 1)
    assert generate_ground_truth(200, 1) != generate_ground_truth(200, 2)
    gt = generate_ground_truth(200, 1)
    assert generate_predictions(gt, "weak", 1) == generate_predictions(gt, "weak", 1)


def test_records_have_the_real_shapes() -> None:
    gt = generate_ground_truth(300, 0)
    by_type = {r["qa_type"]: r for r in gt}
    assert set(by_type) == set(VARIANT_TEST_COUNTS)
    assert by_type["tal"]["struc_info"][0]["spans"][0].keys() == {"start", "end"}
    assert "bbox_dict" in by_type["stg"]["struc_info"][0]
    assert set(by_type["cvs_assessment"]["struc_info"][0]["cvs_scores"]) == {
        "two_structures",
        "cystic_plate",
        "hepatocystic_triangle",
    }
    assert set(by_type["skill_assessment"]["struc_info"][0]) == {"skill_level", "skill_scores"}
    assert by_type["region_caption_gpt"]["is_RC"] is True
    for r in gt:
        assert r["conversations"][0]["value"].startswith("<video>\n")
        assert isinstance(r["metadata"]["fps"], str)


def test_clips_carry_several_questions() -> None:
    gt = generate_ground_truth(2000, 0)
    ids = Counter(json.dumps(r["metadata"], sort_keys=True) for r in gt)
    assert sum(1 for n in ids.values() if n > 1) > 50


def test_dataset_task_mapping() -> None:
    gt = generate_ground_truth(2000, 0)
    assert {r["data_source"] for r in gt if r["qa_type"] == "cvs_assessment"} == {"Cholec80_CVS"}
    assert {r["data_source"] for r in gt if r["qa_type"] == "skill_assessment"} == {"JIGSAWS"}


def test_shuffled_is_strong_in_another_order() -> None:
    gt = generate_ground_truth(500, 3)
    strong = generate_predictions(gt, "strong", 3)
    shuffled = generate_predictions(gt, "shuffled", 3)
    assert shuffled != strong
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    assert sorted(map(key, shuffled)) == sorted(map(key, strong))


def test_unknown_archetype_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown archetype 'great'"):
        generate_predictions([], "great")


@pytest.mark.parametrize("archetype", ARCHETYPES)
def test_archetype_verdicts(
    synthetic: dict[str, Path], synthetic_gt: GroundTruth, archetype: str
) -> None:
    result = validate_submission(synthetic[archetype], synthetic_gt)
    report = result.report
    if archetype == "partial":
        assert report.verdict == "partial"
        assert report.missing_tasks == ["video_summary", "region_caption", "skill_assessment"]
    else:
        assert report.verdict == "valid", report.errors.items[:3]
        assert report.matched == len(synthetic_gt)


def test_shuffled_matches_every_sample_to_the_same_text_as_strong(
    synthetic: dict[str, Path], synthetic_gt: GroundTruth
) -> None:
    strong = validate_submission(synthetic["strong"], synthetic_gt).predictions
    shuffled = validate_submission(synthetic["shuffled"], synthetic_gt).predictions
    assert None not in shuffled
    assert shuffled == strong


def test_perfect_predictions_are_the_reference_answers(
    synthetic: dict[str, Path], synthetic_gt: GroundTruth
) -> None:
    predictions = validate_submission(synthetic["perfect"], synthetic_gt).predictions
    assert predictions == [s.answer for s in synthetic_gt.samples]


def test_written_ground_truth_loads(synthetic: dict[str, Path]) -> None:
    gt = load_ground_truth(synthetic["ground_truth"])
    assert len(gt) == 600
