"""Ground-truth loading: the real SFT format, canonical names, and every refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from medvidbench.benchmarks.medvidbench.datasets import DATASETS, canonical_dataset
from medvidbench.benchmarks.medvidbench.groundtruth import load_ground_truth
from medvidbench.core.errors import InvalidGroundTruthError
from tests.conftest import gt_record, small_records


def load(records: Any) -> Any:
    return load_ground_truth(json.dumps(records).encode())


def refusal(records: Any) -> list[str]:
    with pytest.raises(InvalidGroundTruthError) as info:
        load(records)
    return [p.message for p in info.value.problems.items]


def test_list_and_dict_layouts_load_the_same() -> None:
    as_list = load(small_records())
    as_dict = load({str(i): r for i, r in enumerate(small_records())})
    assert as_list.samples == as_dict.samples
    s = as_list.samples[0]
    assert (s.sample_id, s.task, s.dataset, s.fps) == (
        "kcOqlifSukA&&22425&&25124&&1.0",
        "tal",
        "AVOS",
        1.0,
    )
    assert s.question == "Find the segment(s) where tying happens."
    assert s.answer == "1.0-2.0 seconds."


def test_struc_info_is_kept_and_decoded_on_demand() -> None:
    gt = load([gt_record(struc_info=[{"spans": [{"start": 1, "end": 2}]}])])
    assert gt.samples[0].structure() == [{"spans": [{"start": 1, "end": 2}]}]


def test_counts_and_groups() -> None:
    gt = load(small_records())
    assert gt.task_counts() == {"tal": 2, "stg": 1, "dense_captioning": 2}
    assert gt.dataset_counts() == {"AVOS": 3, "NurViD": 2}
    assert gt.groups[("kcOqlifSukA&&22425&&25124&&1.0", "tal")] == [0, 1]


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("Cholec80-CVS", "Cholec80_CVS"),
        ("cholec80_cvs", "Cholec80_CVS"),
        ("jigsaws", "JIGSAWS"),
        ("NURVID", "NurViD"),
        ("Ego Surgery", "EgoSurgery"),
        ("copesd", "CoPESD"),
    ],
)
def test_dataset_spellings_are_canonicalised(spelling: str, canonical: str) -> None:
    assert canonical_dataset(spelling) == canonical
    assert load([gt_record(data_source=spelling)]).samples[0].dataset == canonical


def test_every_canonical_name_is_its_own_canonical_form() -> None:
    assert [canonical_dataset(d) for d in DATASETS] == list(DATASETS)


def test_dataset_name_is_the_fallback_for_unknown_data_source() -> None:
    rec = gt_record(data_source="Unknown")
    rec["dataset_name"] = "jigsaws"
    assert load([rec]).samples[0].dataset == "JIGSAWS"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda r: r.update(data_source="Cholec80"),
            "record 0 (id 'kcOqlifSukA&&22425&&25124&&1.0'): expected data_source to be one of AVOS, "
            "CholecT50, CholecTrack20, Cholec80_CVS, CoPESD, EgoSurgery, NurViD, JIGSAWS; got 'Cholec80'",
        ),
        (
            lambda r: r.pop("data_source"),
            "record 0 (id 'kcOqlifSukA&&22425&&25124&&1.0'): expected data_source to be one of AVOS, "
            "CholecT50, CholecTrack20, Cholec80_CVS, CoPESD, EgoSurgery, NurViD, JIGSAWS; got nothing",
        ),
        (
            lambda r: r.update(qa_type="dc"),
            "record 0 (id 'kcOqlifSukA&&22425&&25124&&1.0'): unknown qa_type 'dc'",
        ),
        (
            lambda r: r["metadata"].update(fps="fast"),
            "record 0 (id 'kcOqlifSukA&&22425&&25124&&fast'): expected metadata.fps to be a positive "
            "number, got 'fast'",
        ),
        (
            lambda r: r["metadata"].update(fps="0"),
            "record 0 (id 'kcOqlifSukA&&22425&&25124&&0'): expected metadata.fps to be a positive "
            "number, got '0'",
        ),
        (
            lambda r: r["conversations"].pop(),
            "record 0 (id 'kcOqlifSukA&&22425&&25124&&1.0'): expected a 'human' and a 'gpt' turn in "
            "conversations",
        ),
        (lambda r: r.pop("metadata"), "record 0: missing field 'metadata'"),
        (lambda r: r["metadata"].pop("video_id"), "record 0, metadata: missing field 'video_id'"),
        (
            lambda r: r["metadata"].update(fps=None),
            "record 0, metadata: expected field 'fps' to be a string or a number, got null",
        ),
        (
            lambda r: r.update(conversations="hi"),
            "record 0: expected field 'conversations' to be an array, got a string",
        ),
        (
            lambda r: r.update(conversations=[{"from": "human"}]),
            "record 0: Object missing required field `value` - at `$.conversations[0]`",
        ),
    ],
)
def test_refusals_say_what_and_where(change: Any, expected: str) -> None:
    rec = gt_record()
    change(rec)
    assert expected in refusal([rec])


def test_all_problems_of_all_records_are_listed() -> None:
    recs = [gt_record(data_source="Nowhere"), gt_record(qa_type="x"), gt_record()]
    found = refusal(recs)
    assert len(found) == 2
    assert found[1].startswith("record 1 ")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", "the ground truth is empty"),
        (b"{}", "the ground truth contains no records"),
        (b"[1]", "record 0: expected an object, got int"),
        (
            b"nope",
            "the ground truth is not valid JSON: JSON is malformed: invalid character at line 1, column 5",
        ),
    ],
)
def test_file_level_refusals(raw: bytes, expected: str) -> None:
    with pytest.raises(InvalidGroundTruthError) as info:
        load_ground_truth(raw)
    assert [p.message for p in info.value.problems.items] == [expected]


def test_indistinguishable_samples_are_warned_about() -> None:
    gt = load([gt_record(), gt_record()])
    assert gt.warnings.totals == {"indistinguishable-samples": 1}
