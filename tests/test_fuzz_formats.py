"""Hypothesis-generated junk never raises anything but our own validation errors."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth, load_ground_truth
from medvidbench.benchmarks.medvidbench.matching import load_submission, validate_submission
from medvidbench.core.errors import InvalidGroundTruthError, InvalidSubmissionError
from tests.conftest import small_records

GT = load_ground_truth(json.dumps(small_records()).encode())
FIELDS = [
    "id",
    "qa_type",
    "prediction",
    "answer",
    "index",
    "metadata",
    "question",
    "gnd",
    "video_id",
    "fps",
    "conversations",
    "struc_info",
    "data_source",
    "response",
]

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=25,
)
# Records that look almost right: the real field names with arbitrary values.
near_records = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["kcOqlifSukA&&22425&&25124&&1.0", "x"]) | scalars,
        "qa_type": st.sampled_from(["tal", "stg", "dense_captioning", "dc"]) | scalars,
        "prediction": scalars,
        "answer": scalars,
        "index": st.integers(-3, 8) | scalars,
        "metadata": json_values,
        "question": scalars,
        "gnd": json_values,
    },
)


def survive_submission(data: bytes, gt: GroundTruth = GT) -> None:
    report = validate_submission(data, gt).report
    assert report.verdict in {"valid", "partial", "invalid"}
    json.dumps(report.to_dict())
    try:
        load_submission(data, gt)
    except InvalidSubmissionError as exc:
        assert exc.message and exc.problems
    for p in report.errors.items:
        assert p.message


common = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(json_values)
def test_random_json_values(value: Any) -> None:
    survive_submission(json.dumps(value).encode())


@common
@given(
    st.lists(near_records, max_size=8)
    | st.dictionaries(st.text(max_size=3), near_records, max_size=6)
)
def test_nearly_valid_records(records: Any) -> None:
    survive_submission(json.dumps(records).encode())


@common
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    survive_submission(data)


@common
@given(st.integers(0, 2000), st.sampled_from([b"[", b'{"a":', b'[{"qa_type":']))
def test_truncated_and_deeply_nested(cut: int, opener: bytes) -> None:
    valid = json.dumps([{"id": "a", "qa_type": "tal", "prediction": "1-2 seconds"}] * 20).encode()
    survive_submission(valid[: cut % (len(valid) + 1)])
    survive_submission(opener * cut)


@common
@given(st.lists(near_records, max_size=6).map(lambda rs: "\n".join(json.dumps(r) for r in rs)))
def test_jsonl_junk(text: str) -> None:
    report = validate_submission(text.encode(), GT, name="junk.jsonl").report
    assert report.verdict in {"valid", "partial", "invalid"}


@common
@given(
    json_values
    | st.lists(st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6), max_size=5)
)
def test_ground_truth_junk(value: Any) -> None:
    try:
        load_ground_truth(json.dumps(value).encode())
    except InvalidGroundTruthError as exc:
        assert exc.problems


def test_bytes_that_are_not_utf8_are_placed_in_either_layout() -> None:
    """Whichever way the installed msgspec reports them (UnicodeDecodeError up to 0.22, a JSON
    syntax error from 0.23), bytes that are not UTF-8 are named with their line and column; in
    a key too, which msgspec's typed decoder read as a field it does not know (the record then
    said it had no 'id')."""
    rows = [{"id": f"v&&{i}&&{i + 9}&&1.0", "qa_type": "tal", "prediction": "1-2"} for i in (1, 2)]
    good = json.dumps(rows).encode()
    at = good.index(b'"1-2"') + 1
    report = validate_submission(good[:at] + b"\xff" + good[at:], GT).report
    assert [p.code for p in report.errors.items] == ["not-utf8"]
    assert f"byte 0xff at line 1, column {at + 1}" in report.errors.items[0].message
    lines = b"\n".join(json.dumps(r).encode() for r in rows)
    second = lines.rindex(b'"1-2"') + 1  # inside the second line's answer
    as_jsonl = lines[:second] + b"\xe9" + lines[second:]
    report = validate_submission(as_jsonl, GT, name="p.jsonl").report
    assert [p.code for p in report.errors.items] == ["not-utf8"]
    column = second - lines.index(b"\n")
    assert f"byte 0xe9 at line 2, column {column}" in report.errors.items[0].message
    in_key = lines.replace(b'"id"', b'"i\xe9d"', 1)
    report = validate_submission(in_key, GT, name="p.jsonl").report
    assert [p.code for p in report.errors.items] == ["not-utf8"]
    assert "byte 0xe9 at line 1, column 4" in report.errors.items[0].message


def test_utf8_is_checked_a_step_at_a_time_across_step_boundaries() -> None:
    """The check decodes a megabyte at a time: a character cut by a step's end is still valid,
    and a bad byte past the first step is still placed."""
    from medvidbench.core import formats

    row = {"id": "v&&1&&10&&1.0", "qa_type": "tal", "prediction": "1-2"}
    head = b'[{"note": "'
    pad = b"a" * (formats._UTF8_STEP - len(head) - 1)  # "é" (2 bytes) straddles the step
    good = head + pad + "é".encode() + b'", ' + json.dumps(row).encode()[1:] + b"]"
    assert "not-utf8" not in {p.code for p in validate_submission(good, GT).report.errors.items}
    bad = good[:-30] + b"\xff" + good[-30:]
    report = validate_submission(bad, GT).report
    assert [p.code for p in report.errors.items] == ["not-utf8"]
    assert f"byte 0xff at line 1, column {len(bad) - 30}" in report.errors.items[0].message
