"""Table-driven parser cases per task and profile, and parsers that never raise."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medvidbench.benchmarks.medvidbench.tasks import cvs, dvc, nap, sa, stg, tal


@pytest.mark.parametrize(
    ("text", "strict", "expected"),
    [
        ("1.1-3.0 seconds.", False, [(1.1, 3.0)]),
        ("22.0-78.0, 89.0-94.0 seconds.", False, [(22.0, 78.0), (89.0, 94.0)]),
        ("1.1 - 3.0 seconds.", False, [(1.1, 3.0)]),  # spaces around a hyphen are fine in v1 TAL
        ("1.1–3.0 seconds.", False, []),
        ("12.1s - 15.0s", False, []),
        ("from 5 to 9.456 seconds", False, [(5.0, 9.46)]),
        ("00:01:05 to 00:01:10", False, [(5.0, 0.0), (65.0, 70.0)]),  # both fallbacks fire
        ("1.1–3.0 seconds.", True, [(1.1, 3.0)]),
        ("12.1s - 15.0s", True, [(12.1, 15.0)]),
        ("from 12.1 to 117.0 seconds", True, [(12.1, 117.0)]),
        ("1.0—2.0 and 4 to 5 seconds", True, [(1.0, 2.0), (4.0, 5.0)]),
        ("no numbers here", True, []),
    ],
)
def test_tal_parse(text: str, strict: bool, expected: list[tuple[float, float]]) -> None:
    assert tal.parse(text, strict) == expected


@pytest.mark.parametrize(
    ("text", "strict", "expected"),
    [
        ("1.0 seconds: [1, 2, 3, 4]", False, {"1.0": [1.0, 2.0, 3.0, 4.0]}),
        ("1 seconds: [1, 2, 3, 4]", False, {"1.0": [1.0, 2.0, 3.0, 4.0]}),
        ("1.0 seconds: [[1, 2, 3, 4]]", False, {"1.0": [1.0, 2.0, 3.0, 4.0]}),
        (
            "1.0 seconds: [1, 2, 3, 4] 2.0 seconds: [a, b]",
            False,
            {"1.0": [1.0, 2.0, 3.0, 4.0], "2.0": [1.0, 2.0, 3.0, 4.0]},
        ),  # malformed repeats last valid
        ("1.0seconds: [1, 2, 3, 4]", False, {}),
        ("1.0 s: [1, 2, 3, 4]", False, {}),
        (
            "1.0s: [1, 2, 3, 4] 2 SECONDS: [5, 6, 7, 8]",
            True,
            {"1": [1.0, 2.0, 3.0, 4.0], "2": [5.0, 6.0, 7.0, 8.0]},
        ),
        ("[0.5, 1.5, 2.5, 3.5]", True, {"1": [0.5, 1.5, 2.5, 3.5]}),
        # v1's [[...]] fallback keeps a box only if it is exactly four integers, as upstream's
        # extract_boxes does (int() of every piece, any failure or another length drops it);
        # these answers once crashed the whole evaluation (ValueError, IndexError in scoring)
        ("[[1 2, 3, 4, 5]]", False, {}),
        ("[[1, 2, 3]]", False, {}),
        ("[[1, 2, 3, 4, 5]]", False, {}),
        ("[[1, 2, 3, 4,]]", False, {}),
        ("[[ ]]", False, {}),
        (
            "[[1, 2, 3]] [[5, 6, 7, 8]] [[9, 9, 9, 9]]",
            False,
            {"1.0": [5.0, 6.0, 7.0, 8.0], "2.0": [9.0, 9.0, 9.0, 9.0]},
        ),
        # an entry's numbers lose a "[" before them or a "]" after them, nothing else
        ("1.0 seconds: [1[, 2, 3, 4]", False, {}),
        (
            "1.0 seconds: [1, 2, 3, 4] 2.0 seconds: [5[, 6, 7, 8]",
            False,
            {"1.0": [1.0, 2.0, 3.0, 4.0], "2.0": [1.0, 2.0, 3.0, 4.0]},
        ),
    ],
)
def test_stg_parse(text: str, strict: bool, expected: dict[str, list[float]]) -> None:
    assert stg.parse(text, ["1.0", "2.0"], strict) == expected


@pytest.mark.parametrize(
    ("text", "strict", "expected"),
    [
        ("0.0-10.0 seconds: a\n10.0-20.0 seconds: b", False, [(0.0, 10.0, "a"), (10.0, 20.0, "b")]),
        ("0.0-10.0 second: a", False, [(0.0, 10.0, "a")]),
        (
            "0.0-10.0 seconds: a\nmore\n10.0-20.0 seconds: b",
            False,
            [(0.0, 10.0, "a more"), (10.0, 20.0, "b")],
        ),
        ("0.0-10.0 seconds: a\n0.0-10.0 seconds: again", False, [(0.0, 10.0, "a")]),
        ("**0.0 - 5.0 seconds** - The nurse checks.", False, [(0.0, 5.0, "The nurse checks.")]),
        ("0.0 - 10.0 seconds: no hyphen after", False, []),
        ("0.0 - 10.0 seconds: a\n10.0–20.0 s: b", True, [(0.0, 10.0, "a"), (10.0, 20.0, "b")]),
        ("1. 0.0-5.0 seconds: a 5.0-9.0 seconds: b", True, [(0.0, 5.0, "a"), (5.0, 9.0, "b")]),
        ("nothing", True, []),
    ],
)
def test_dvc_parse(text: str, strict: bool, expected: list[Any]) -> None:
    assert dvc.parse(text, strict) == expected


def test_dvc_flatten_cuts_overlaps_at_every_boundary() -> None:
    events = [(0.0, 10.0, "long"), (5.0, 8.0, "short")]
    assert dvc.flatten(events) == [(0.0, 5.0, "long"), (5.0, 8.0, "long"), (8.0, 10.0, "long")]
    assert dvc.flatten([(0.0, 1.0, "a"), (1.0, 2.0, "b")]) == [(0.0, 1.0, "a"), (1.0, 2.0, "b")]


@pytest.mark.parametrize(
    ("text", "strict", "expected"),
    [
        ("tying", False, "tying"),
        (" tying\n", False, "tying"),
        ("Tying", False, "Tying"),
        ("Tying.", True, "tying"),
        ("Dissect  flap with knife!", True, "dissect flap tissue with knife"),
        ("carlot-triangle-dissection", True, "carlot-triangle-dissection"),
    ],
)
def test_nap_normalize(text: str, strict: bool, expected: str) -> None:
    assert nap.normalize(text, strict) == expected


def test_nurvid_procedure_first_versus_longest() -> None:
    q = "In this Subcutaneous Injection Insulin procedure video, what comes next?"
    assert nap.nurvid_procedure(q) == "Subcutaneous Injection"
    assert nap.nurvid_procedure(q, strict=True) == "Subcutaneous Injection Insulin"
    assert nap.nurvid_procedure("nothing named") is None


@pytest.mark.parametrize(
    ("text", "strict", "expected"),
    [
        ("Respect for tissue: 2/5", False, ("novice", {"Respect for tissue": 2})),
        ("a: 4/5, b: 5/5", False, ("expert", {"a": 4, "b": 5})),
        ("a: 3/5, b: 4/5", False, ("intermediate", {"a": 3, "b": 4})),
        ("no scores", False, (None, {})),
        ("A: 3/5; B: 4 / 5\nC: 9/5", True, ("intermediate", {"a": 3, "b": 4})),
    ],
)
def test_sa_parse(text: str, strict: bool, expected: Any) -> None:
    assert sa.parse(text, strict) == expected


@pytest.mark.parametrize(
    ("text", "strict", "expected"),
    [
        (
            "Two structures: 2, Cystic plate: 1, Hepatocystic triangle: 0",
            False,
            {"two_structures": 2, "cystic_plate": 1, "hepatocystic_triangle": 0},
        ),
        ("TWO STRUCTURES: 1", False, {"two_structures": 1}),
        ("two structures 2", False, {}),
        ("Two structures: 2\nCystic plate: 1", True, {"two_structures": 2, "cystic_plate": 1}),
        ("Cystic  plate : 3", True, {}),
    ],
)
def test_cvs_parse(text: str, strict: bool, expected: dict[str, int]) -> None:
    assert cvs.parse(text, strict) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.booleans())
def test_no_parser_ever_raises(text: str, strict: bool) -> None:
    tal.parse(text, strict)
    stg.parse(text, ["1.0", "2.25"], strict)
    dvc.parse(text, strict)
    sa.parse(text, strict)
    cvs.parse(text, strict)
    nap.normalize(text, strict)


numbers = st.floats(0, 500, allow_nan=False).map(lambda x: round(x, 1))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(numbers, numbers), max_size=6),
    st.lists(st.tuples(numbers, numbers), max_size=6),
    st.booleans(),
)
def test_tal_scores_stay_in_range(
    gt: list[tuple[float, float]], pred: list[tuple[float, float]], strict: bool
) -> None:
    gt = [(a, b) for a, b in gt if b > a] or [(0.0, 1.0)]
    for value in tal.score(gt, pred, 0.5, strict).values():
        assert 0.0 <= value <= 1.0 + 1e-12


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(numbers, numbers, st.just("c")), min_size=1, max_size=5),
    st.lists(st.tuples(numbers, numbers, st.just("c")), max_size=5),
    st.booleans(),
)
def test_dvc_f1_stays_in_range(gt: list[Any], pred: list[Any], strict: bool) -> None:
    value = dvc.score(gt, pred, 0.5, strict)
    assert value is None or 0.0 <= value <= 1.0


_FORMAT_CHARACTERS = "0123456789 ,.-:/\n*–sto SECONDS seconds from 5/5 Description: ab"
# answers assembled from the pieces boxes are written with, so that near misses are common
_BOX_PIECES = [
    "[[",
    "]]",
    "[",
    "]",
    "1",
    "23",
    "4.5",
    ",",
    ", ",
    " ",
    "1.0 seconds: ",
    "2 second: ",
]
box_answers = st.lists(st.sampled_from(_BOX_PIECES), max_size=24).map("".join)
_STG_GT = {"1.0": [0.0, 0.0, 10.0, 10.0], "2.0": [5.0, 5.0, 20.0, 20.0]}


@given(box_answers, st.booleans())
@settings(max_examples=600, deadline=None)
def test_any_stg_answer_is_read_and_scored_without_raising(text: str, strict: bool) -> None:
    """Answers made of the characters boxes are written with: whatever the parser reads, the
    sample's score is a number in [0, 1] (an answer never stops an evaluation)."""
    value = stg.score(_STG_GT, stg.parse(text, list(_STG_GT), strict), strict)
    assert 0.0 <= value <= 1.0


@given(st.text(alphabet=_FORMAT_CHARACTERS, max_size=80))
@settings(max_examples=600, deadline=None)
def test_the_readable_check_is_what_the_v1_parsers_read(text: str) -> None:
    """``reads_something`` answers what ``bool(parse)`` does under leaderboard-v1, without
    building the parse (the validator asks it of every answer)."""
    assert dvc.reads_something(text) == bool(dvc.parse(text))
    assert tal.reads_something(text) == bool(tal.parse(text))
    assert sa.reads_something(text) == (sa.parse(text)[0] is not None)


@given(box_answers)
@settings(max_examples=600, deadline=None)
def test_the_stg_readable_check_is_what_the_v1_parser_reads(text: str) -> None:
    """STG's check needs no reference: v1 reads a box from an answer at some item's keys exactly
    when it reads one at any keys (the entries carry their own times; [[...]] boxes take the
    item's keys in order)."""
    assert stg.reads_something(text) == bool(stg.parse(text, ["1.0", "2.0"]))
