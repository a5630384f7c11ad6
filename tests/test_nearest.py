"""The nearest class vector: one answer, whether summed in Python or checked after numpy."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medvidbench.core import nearest as nearest_module
from medvidbench.core.nearest import exact_dot, nearest


def python_only(queries: list[list[float]], candidates: list[list[float]]) -> list[int]:
    """The rule written out: the largest fsum of products, the first of equals."""
    out = []
    for q in queries:
        sums = [math.fsum(a * b for a, b in zip(q, c, strict=True)) for c in candidates]
        out.append(sums.index(max(sums)))
    return out


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    queries=st.integers(1, 12),
    classes=st.integers(1, 9),
    dim=st.sampled_from([2, 3, 16, 384]),
)
def test_both_ways_give_the_rule_s_answer(seed: int, queries: int, classes: int, dim: int) -> None:
    rng = np.random.default_rng(seed)
    c = unit_rows(rng, classes, dim)
    q = unit_rows(rng, queries, dim)
    # Plant exact ties (a repeated class, a query equal to a class) and near ties (a class
    # nudged by one float32 step in one coordinate).
    if classes > 2:
        c[2] = c[0]
        c[1] = c[0]
        c[1, 0] = np.nextafter(c[0, 0], np.float32(2.0))
    q[0] = c[min(1, classes - 1)]
    want = python_only(q.tolist(), c.tolist())
    assert nearest_module.nearest_checked(q, c) == want
    assert nearest_module.nearest_checked(list(q), list(c)) == want


def test_a_difference_float64_cannot_see_is_decided_exactly() -> None:
    """1 + 2**-60 - 1 is 0 in float64 (any order): the matrix product calls the two candidates
    equal, the exact sums do not."""
    q = np.array([[1.0, 1.0, 1.0]], dtype=np.float32)
    c = np.array([[0.0, 0.0, 0.0], [1.0, 2.0**-60, -1.0]], dtype=np.float32)
    assert (q.astype(np.float64) @ c.astype(np.float64).T).tolist() == [[0.0, 0.0]]
    assert python_only(q.tolist(), c.tolist()) == [1]
    assert nearest_module.nearest_checked(q, c) == [1]
    assert nearest(q.tolist(), c.tolist()) == [1]


def test_the_python_way_is_taken_without_numpy_and_agrees() -> None:
    rng = np.random.default_rng(7)
    c, q = unit_rows(rng, 6, 384), unit_rows(rng, 20, 384)
    q[3] = c[4]
    code = (
        "import json, sys\n"
        "from medvidbench.core.nearest import nearest\n"
        "q, c = json.load(sys.stdin)\n"
        "print(json.dumps([nearest(q, c), 'numpy' in sys.modules]))\n"
    )
    payload = f"[{q.tolist()!r}, {c.tolist()!r}]"
    done = subprocess.run(
        [sys.executable, "-c", code], input=payload, capture_output=True, text=True, check=True
    )
    got, numpy_loaded = json.loads(done.stdout)
    assert numpy_loaded is False
    assert got == python_only(q.tolist(), c.tolist()) == nearest(q, c)
    assert got[3] == 4


def test_float32_arrays_are_summed_as_doubles() -> None:
    """numpy float32 scalars multiply to float32; the rule's products are exact doubles."""
    a = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    want = math.fsum(float(x) * float(y) for x, y in zip(a, a, strict=True))
    assert exact_dot(a.tolist(), a.tolist()) == want
    assert nearest([a], [a * np.float32(0.5), a]) == [1]


def test_no_candidate_is_an_error_and_no_query_is_no_answer() -> None:
    with pytest.raises(ValueError, match="at least one candidate"):
        nearest([[1.0]], [])
    with pytest.raises(ValueError, match="one length"):
        nearest([[1.0]], [[0.0, 5.0], [1.0, 0.0]])
    for bad in (math.nan, math.inf):
        for way in (nearest_module.nearest_in_python, nearest_module.nearest_checked):
            with pytest.raises(ValueError, match="finite"):
                way([[1.0, 0.0]], [[1.0, 0.0], [bad, 0.0]])
    assert nearest([], [[1.0, 0.0]]) == []
    assert nearest_module.nearest_checked([], [[1.0, 0.0]]) == []


def test_every_shipped_label_maps_as_the_float32_product_mapped_it() -> None:
    """The exact rule decides every known label against every shipped class list, under both
    profiles' spellings, as the float32 matrix product did: no published number moves. (The
    Python way on the longest lists only: it sums each product one by one.)"""
    from medvidbench.benchmarks.medvidbench.nap_classes import nap_classes
    from medvidbench.benchmarks.medvidbench.tasks import nap

    embedder = nap.prepared_embedder()
    data = nap_classes()
    every_action = nap.class_list(("NurViD", None), [])
    longest = [data["AVOS"], data["CholecT50"], data["CoPESD"], every_action]
    lists = [*longest, data["EgoSurgery_reference_only"], *data["NurViD_procedures"].values()]
    labels = nap.known_labels()
    texts = embedder.encode(labels)
    assert len(every_action) > 100
    for classes in lists:
        for strict in (False, True):
            vectors = embedder.encode([nap.normalize(c, strict) for c in classes])
            want = (texts @ vectors.T).argmax(axis=1).tolist()
            assert nearest_module.nearest_checked(texts, vectors) == want
            if classes in longest and not strict:
                rows = embedder.vectors([nap.normalize(c) for c in classes])
                assert nearest_module.nearest_in_python(embedder.vectors(labels), rows) == want


def test_a_strong_file_is_scored_without_numpy(tmp_path: Path) -> None:
    """Unmatched next-action answers that are known labels need neither the encoder nor numpy."""
    from medvidbench import benchmarks

    bench = benchmarks.get("medvidbench")
    assert bench.demo is not None
    written = bench.demo.synthesise(tmp_path, 800, 3)
    code = (
        "import sys\n"
        "from medvidbench.library import evaluate\n"
        "report = evaluate(sys.argv[1], sys.argv[2])\n"
        "print(report.metrics['nap_acc'] is not None, 'numpy' in sys.modules)\n"
    )
    command = [sys.executable, "-c", code, str(written["strong"]), str(written["ground_truth"])]
    # The first run may build the model cache's label vectors (with numpy); the second reads them.
    subprocess.run(command, capture_output=True, check=True)
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]
