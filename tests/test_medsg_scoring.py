"""MedSG-Bench scoring against the specification's test vectors (medsg.md §12), which were
produced by running the official functions: every parsed box and IoU is compared with ``==``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medvidbench.benchmarks.medsg.scoring import (
    FALLBACK,
    TaskTotals,
    official_iou,
    parse_corrected,
    parse_old,
    parse_strong,
    score_corrected,
    score_official,
)

VECTORS = json.loads((Path(__file__).parent / "data" / "medsg" / "vectors.json").read_text())


@pytest.mark.parametrize("row", VECTORS["strong"], ids=lambda r: r["id"])
def test_strong_parser_and_iou_match_the_official_functions(row: dict) -> None:  # type: ignore[type-arg]
    parsed = parse_strong(row["answer"])
    assert parsed == row["parsed"]
    if row["error"] == "ZeroDivisionError":
        with pytest.raises(ZeroDivisionError):
            official_iou(row["groundtruth"], parsed)
        item = score_official(row["answer"], row["groundtruth"])
        assert item.iou == 0.0 and item.zero_union
    else:
        assert official_iou(row["groundtruth"], parsed) == row["iou"]
        item = score_official(row["answer"], row["groundtruth"])
        assert item.iou == row["iou"] and item.unparsed == (parsed == FALLBACK)


@pytest.mark.parametrize("row", VECTORS["old"], ids=lambda r: r["id"])
def test_old_parser_and_iou_match_the_official_functions(row: dict) -> None:  # type: ignore[type-arg]
    width, height = row["width_height"]
    parsed = parse_old(row["answer"], width, height)
    assert parsed == row["parsed"]
    assert official_iou(row["groundtruth"], parsed) == row["iou"]
    size = row["width_height"] if row["task"] == "multi_view" else None
    item = score_official(row["answer"], row["groundtruth"], "old", size)
    assert item.iou == row["iou"] and item.unparsed == (parsed == [])


def test_aggregation_matches_the_official_counters() -> None:
    vector = VECTORS["aggregation"]
    totals = TaskTotals()
    for item in vector["items"]:
        scored = score_official(item["answer"], item["groundtruth"])
        assert scored.iou == item["iou"]
        totals.add(scored)
    task = vector["task"]
    assert totals.counters(task) == {task: vector["counters"]}
    printed = {k: 100 * v / totals.n for k, v in vector["counters"].items() if k != "TOTAL"}
    assert printed == vector["printed_percentages"]
    assert totals.metrics(task) == {
        f"{task}.miou": 2.79 / 6,
        f"{task}.acc_03": 4 / 6,
        f"{task}.acc_05": 3 / 6,
        f"{task}.acc_07": 2 / 6,
    }
    assert totals.n_unparsed == 1  # the unparseable answer stays in the denominator


@pytest.mark.parametrize("row", VECTORS["corrected_design"], ids=lambda r: r["id"])
def test_corrected_profile_design_vectors(row: dict) -> None:  # type: ignore[type-arg]
    item = score_corrected(
        row["answer"], row["groundtruth"], row["coordinates"], row["target_size"]
    )
    assert item.unparsed == row["unparsed"]
    assert item.box == row["parsed"]
    assert item.iou == row["iou"]
    # and the official contrast column, from the official functions' reimplementation
    assert parse_strong(row["answer"]) == row["official_strong_parsed"]


def test_corrected_keeps_what_the_official_rules_read_well() -> None:
    """On well-formed answers the two profiles agree (§11: expected effect)."""
    for answer in (
        "(100,60),(220,250)",
        "[91, 52, 229, 258]",
        "10 20 30 40",
        "<|box_start|>(1,2),(3,4)<|box_end|>",
    ):
        assert parse_corrected(answer)[0] == parse_strong(answer)


def test_an_array_prediction_is_the_box_itself() -> None:
    item = score_official([0, 0, 50, 100], [0, 0, 100, 100])
    assert item.iou == 0.5 and not item.unparsed


@pytest.mark.parametrize(
    ("answer", "gt", "box", "iou", "multi"),
    [
        # keyed coordinates: "x1" lends no digit, "=" and ", y1=" are not separators: unparsed
        ("x1=10, y1=20, x2=30, y2=40", [10, 20, 30, 40], None, 0.0, False),
        # U+2212 minus kept: inter 40x35 = 1400, union 1600 + 52x40 - 1400 = 2280
        ("Box: (−12, 5), (40, 45)", [0, 0, 40, 40], [-12.0, 5.0, 40.0, 45.0], 1400 / 2280, False),
        # a trailing dot ends a number: inter 17.5x20 = 350, union 400 + 350 - 350 = 400
        ("[12.5, 20, 30, 40.]", [10, 20, 30, 40], [12.5, 20.0, 30.0, 40.0], 350 / 400, False),
        # two boxes: the first is scored (inter 10x10 against a 30x30 reference) and flagged
        (
            "(0,0),(10,10) and (20,20),(30,30)",
            [0, 0, 30, 30],
            [0.0, 0.0, 10.0, 10.0],
            100 / 900,
            True,
        ),
    ],
)
def test_corrected_profile_hand_derived_vectors(answer, gt, box, iou, multi) -> None:  # type: ignore[no-untyped-def]
    item = score_corrected(answer, gt)
    assert item.box == box and item.iou == iou and item.multi_box == multi
    assert item.unparsed == (box is None)
