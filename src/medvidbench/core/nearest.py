"""The nearest of a few vectors by dot product, decided exactly and the same on every machine.

Next-action answers become the class whose embedding is most similar to theirs (metrics.md
§3.3). A float32 matrix product decides that only up to its rounding, which depends on the
BLAS kernel the CPU runs (an answer's similarities to two classes of a shipped list can lie
2e-7 apart, about the size of that rounding). Here every dot product of two float32 vectors is
taken exactly and rounded once to a double (the product of two float32 values is exact in
double precision; :func:`math.fsum` rounds their sum once), and the nearest is the largest of
those, the first on a tie. The answer depends on the vectors alone.

The vectors must hold finite float32 values (as an encoder gives them): as Python floats, numpy
rows or memoryviews of format ``f``. Two ways give the answer, and they give it identically:

* a few products (a file's unmatched answers against short class lists) are summed in Python
  when numpy is not loaded yet: a cold ``evaluate`` then never imports it (about 0.1-0.2 s);
* otherwise one float64 matrix product is computed, whose error is bounded (below), and only
  the candidates within three bounds of each row's best are summed exactly. Any other candidate
  is more than the bound below the best exactly, so it can neither win nor tie.
"""

from __future__ import annotations

import math
import operator
import sys
from collections.abc import Sequence

Vector = Sequence[float]  # finite float32 values: Python floats, a numpy row or a memoryview

# Without numpy loaded, up to this many multiplications are summed in Python: about 0.1 s here,
# less than importing numpy for one matrix product (0.12-0.23 s on this machine).
PYTHON_LIMIT = 1_000_000
# Unit roundoff of float64. A dot product of n terms of float32 values (whose products can
# neither overflow nor underflow in double precision), summed in any order with or without
# FMA, is off by at most about n * u * sum(|a_i * b_i|) <= n * u * |a| * |b| (Higham, Accuracy
# and Stability of Numerical Algorithms, section 3.1). Two more terms cover the 1/(1 - n u)
# factor and keep the bound above one unit in the last place of the result, so that a
# candidate more than the bound behind is behind after rounding too.
_U = 2.0**-53


def exact_dot(a: Vector, b: Vector) -> float:
    """The dot product of two float32 vectors (as Python floats), exactly rounded to a double."""
    return math.fsum(map(operator.mul, a, b))


def nearest(queries: Sequence[Vector], candidates: Sequence[Vector]) -> list[int]:
    """For each query, the index of the candidate with the largest exact dot product (the
    first of equals).

    Raises:
        ValueError: without candidates, for vectors of different lengths, or for a value
            that is not finite.

    Examples:
        >>> nearest([[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [0.0, 1.0], [0.0, 1.0]])
        [0, 1]
    """
    if len(candidates) == 0:
        raise ValueError("nearest() needs at least one candidate")
    dim = len(candidates[0])
    if any(len(v) != dim for v in (*queries, *candidates)):
        raise ValueError(f"nearest() needs vectors of one length ({dim})")
    if len(queries) * len(candidates) * dim <= PYTHON_LIMIT and "numpy" not in sys.modules:
        return nearest_in_python(queries, candidates)
    return nearest_checked(queries, candidates)


def nearest_in_python(queries: Sequence[Vector], candidates: Sequence[Vector]) -> list[int]:
    """:func:`nearest` with every product summed by :func:`exact_dot` (no numpy)."""
    rows = [_floats(c) for c in candidates]
    return [_first_best([exact_dot(q, c) for c in rows]) for q in map(_floats, queries)]


def _floats(vector: Vector) -> list[float]:
    """Python floats (a numpy float32 times a float32 would round to float32), all finite."""
    values: list[float] = vector.tolist() if hasattr(vector, "tolist") else list(map(float, vector))
    if not all(map(math.isfinite, values)):
        raise ValueError("nearest() needs finite values")
    return values


def _first_best(values: Sequence[float]) -> int:
    return values.index(max(values))


def nearest_checked(queries: Sequence[Vector], candidates: Sequence[Vector]) -> list[int]:
    """:func:`nearest` through one float64 matrix product and an exact look at close calls."""
    import numpy as np

    if len(queries) == 0:
        return []
    q = np.asarray(queries, dtype=np.float64)
    c = np.asarray(candidates, dtype=np.float64)
    if not (np.isfinite(q).all() and np.isfinite(c).all()):
        raise ValueError("nearest() needs finite values")
    sims = q @ c.T
    # Each entry is within `bound` of its exact value (see the module's note on _U).
    bound = (q.shape[1] + 2) * _U * np.linalg.norm(q, axis=1) * np.linalg.norm(c, axis=1).max()
    best = sims.max(axis=1)
    close = sims >= (best - 3 * bound)[:, None]
    out = sims.argmax(axis=1).tolist()
    for row in np.flatnonzero(close.sum(axis=1) > 1).tolist():
        which = np.flatnonzero(close[row]).tolist()
        exact = [exact_dot(q[row].tolist(), c[j].tolist()) for j in which]
        out[row] = which[_first_best(exact)]
    return [int(i) for i in out]
