"""Average-rank ranking: metrics.md §8 K1-K2 and the rules of §6."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medvidbench.core.benchmark import Metric
from medvidbench.core.ranking import metric_ranks, rank_rows

M1, M2 = Metric("m1", "M1", "t", "m1"), Metric("m2", "M2", "t", "m2")


def test_k1_tiebreakers_end_with_the_name() -> None:
    rows = [
        ("b", "B", {"m1": 0.5, "m2": 0.5}),
        ("c", "C", {"m1": 0.1, "m2": 0.9}),
        ("a", "A", {"m1": 0.9, "m2": 0.1}),
    ]
    ranked = rank_rows(rows, [M1, M2])
    assert [(r.name, r.rank) for r in ranked] == [("A", 1), ("C", 2), ("B", 3)]
    a = ranked[0]
    assert (a.average_rank, a.first_places, a.rank_sum) == (2.0, 1, 4)
    assert a.normalised_sum == pytest.approx(1.1111, abs=1e-4)
    assert ranked[1].normalised_sum == pytest.approx(a.normalised_sum)


def test_k2_competition_ranks() -> None:
    assert metric_ranks([0.5, 0.5, 0.4]) == [1, 1, 3]


def test_missing_values_rank_after_all_present_and_are_not_zero() -> None:
    rows = [("x", "X", {"m1": 0.0, "m2": 0.2}), ("y", "Y", {"m1": None, "m2": 0.1})]
    ranked = rank_rows(rows, [M1, M2])
    assert ranked[0].name == "X" and ranked[1].metric_ranks == {"m1": 2, "m2": 2}
    assert ranked[1].metrics_present == 1


def test_values_are_compared_at_three_decimals() -> None:
    rows = [("x", "X", {"m1": 0.1234}), ("y", "Y", {"m1": 0.1231})]
    assert [r.metric_ranks["m1"] for r in rank_rows(rows, [M1])] == [1, 1]


def test_normalised_average_maps_judge_scores() -> None:
    judge = Metric("j", "J", "t", "j", "1-5", judged=True)
    (row,) = rank_rows([("x", "X", {"m1": 0.5, "j": 3.0})], [M1, judge])
    assert row.normalised_average == pytest.approx((0.5 + 0.5) / 2)


def test_first_places_beat_rank_sum() -> None:
    m3 = Metric("m3", "M3", "t", "m3")
    rows = [
        ("p", "P", {"m1": 0.9, "m2": 0.1, "m3": 0.5}),
        ("q", "Q", {"m1": 0.5, "m2": 0.5, "m3": 0.5}),
    ]
    # average ranks (1+2+1)/3 vs (2+1+1)/3 tie; P and Q both have two first places; sums tie;
    # normalised sums 0.9/0.9+0.1/0.5+1 = 2.2 vs 0.5/0.9+1+1 = 2.556: Q first
    assert [r.name for r in rank_rows(rows, [M1, M2, m3])] == ["Q", "P"]


@settings(deadline=None)  # a stall of a loaded machine is no failure
@given(st.lists(st.lists(st.none() | st.floats(0, 1), min_size=2, max_size=2), max_size=12))
def test_ranks_are_one_to_n_without_gaps(values: list[list[float | None]]) -> None:
    rows = [(i, f"m{i}", {"m1": v[0], "m2": v[1]}) for i, v in enumerate(values)]
    assert [r.rank for r in rank_rows(rows, [M1, M2])] == list(range(1, len(values) + 1))


def test_direction_scale_and_ranking_role_come_from_the_metric_table() -> None:
    """A lower-is-better error, a percentage and a shown-only column rank as declared."""
    from medvidbench.core.benchmark import Metric

    table = (
        Metric("err", "Err", "t", "error rate", higher_is_better=False),
        Metric("acc", "Acc", "t", "accuracy", "percent"),
        Metric("note", "Note", "t", "shown, not ranked", ranked=False),
    )
    rows = [
        ("a", "A", {"err": 0.10, "acc": 80.0, "note": 0.0}),
        ("b", "B", {"err": 0.30, "acc": 90.0, "note": 1.0}),
        ("c", "C", {"err": 0.05, "acc": 70.0, "note": 0.5}),
    ]
    ranked = rank_rows(rows, table)
    assert {r.name: r.metric_ranks for r in ranked} == {
        "A": {"err": 2, "acc": 2},
        "B": {"err": 3, "acc": 1},
        "C": {"err": 1, "acc": 3},
    }
    # All average 2.0; B and C have a first place each (A none); their rank sums tie at 4;
    # then the normalised sum: C 0.05/0.05 + 70/90 = 1.778 beats B 0.05/0.30 + 90/90 = 1.167.
    assert [r.name for r in ranked] == ["C", "B", "A"]
    by = {r.name: r for r in ranked}
    assert by["C"].normalised_sum == pytest.approx(1 + 70 / 90)
    assert by["B"].normalised_sum == pytest.approx(0.05 / 0.30 + 1)
    # Normalised average: every column on 0-1 with 1 the best, shown-only ones included.
    assert by["A"].normalised_average == pytest.approx(((1 - 0.10) + 0.80 + 0.0) / 3)
    assert table[0].normalised(0.25) == 0.75 and table[1].normalised(50.0) == 0.5


def _rule_row_by_row(
    rows: list[tuple[object, str, dict[str, float | None]]], metrics: list[Metric]
) -> list[tuple[object, int, float, int, int, float, int, float | None, dict[str, int]]]:
    """metrics.md §6 written out one row and one value at a time, to check the column-wise
    :func:`rank_rows` against: every field of every row, compared exactly."""
    ranked = [m for m in metrics if m.ranked]
    rounded = [
        {m.key: None if (v := r[2].get(m.key)) is None else round(float(v), 3) for m in metrics}
        for r in rows
    ]
    columns = [[r[m.key] for r in rounded] for m in ranked]
    rank_columns = [
        metric_ranks(c, m.higher_is_better) for c, m in zip(columns, ranked, strict=True)
    ]
    bests = [
        (max if m.higher_is_better else min)((x for x in c if x is not None), default=None)
        for c, m in zip(columns, ranked, strict=True)
    ]
    out = []
    for i, (key, name, _) in enumerate(rows):
        ranks = [rc[i] for rc in rank_columns]
        norm = sum(
            (v / best if m.higher_is_better else best / v)
            for v, m, best in zip((c[i] for c in columns), ranked, bests, strict=True)
            if v is not None and best is not None and best > 0 and v > 0
        )
        shown = [n for m in metrics if (n := m.normalised(rounded[i][m.key])) is not None]
        out.append(
            (
                key,
                name,
                sum(ranks) / len(ranks) if ranks else 0.0,
                ranks.count(1),
                sum(ranks),
                norm,
                len(shown),
                sum(shown) / len(shown) if shown else None,
                {m.key: r for m, r in zip(ranked, ranks, strict=True)},
            )
        )
    out.sort(key=lambda r: (r[2], -r[3], r[4], -r[5], r[1]))
    return out


_TABLE = [
    Metric("a", "A", "t", "a"),
    Metric("e", "E", "t", "an error", higher_is_better=False),
    Metric("j", "J", "t", "judged", "1-5", judged=True),
    Metric("p", "P", "t", "percent", "percent"),
    Metric("s", "S", "t", "shown only", ranked=False),
]
# few distinct values at three decimals, so ties, zeros and negatives are common
_VALUE = st.none() | st.sampled_from([0.0, -0.0, 0.1234, 0.1231, 0.5, 0.4999, 1.0, -0.25, 3.0])


@settings(deadline=None)  # a stall of a loaded machine is no failure
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["m1", "m2", "M", "z"]), st.lists(_VALUE, min_size=5, max_size=5)
        ),
        max_size=15,
    )
)
def test_column_wise_ranking_equals_the_rule_row_by_row(
    drawn: list[tuple[str, list[float | None]]],
) -> None:
    rows = [
        (i, name, dict(zip((m.key for m in _TABLE), values, strict=True)))
        for i, (name, values) in enumerate(drawn)
    ]
    expected = _rule_row_by_row(rows, _TABLE)
    found = [
        (
            r.key,
            r.name,
            r.average_rank,
            r.first_places,
            r.rank_sum,
            r.normalised_sum,
            r.metrics_present,
            r.normalised_average,
            r.metric_ranks,
        )
        for r in rank_rows(rows, _TABLE)
    ]
    assert found == expected


def test_a_nan_value_ranks_as_missing_and_infinite_ones_raise_no_warning() -> None:
    import warnings

    rows = [("x", "X", {"m1": float("nan")}), ("y", "Y", {"m1": 0.5}), ("z", "Z", {"m1": None})]
    ranked = {r.name: r for r in rank_rows(rows, [M1])}
    assert ranked["X"].metric_ranks == ranked["Z"].metric_ranks == {"m1": 2}
    assert ranked["X"].metrics_present == 0 and ranked["Y"].rank == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = rank_rows([("a", "A", {"m1": float("inf")}), ("b", "B", {"m1": 1.0})], [M1])
    assert [r.name for r in found] == ["A", "B"]
