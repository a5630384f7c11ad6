"""numpy's matrix products on one thread, unless the environment says how many.

OpenBLAS starts a thread per core and has them spin while they wait for work. On a machine that
other processes keep busy, those threads wait on cores they do not get: the sentence encoder
and the scorers' products ran several times slower, for several times the CPU, than on one
thread (an ``evaluate`` 3.8x the wall and 6x the CPU, a server's first submission 42.6 s against
10.0 s; docs/performance.md). Every ``medvidbench`` command and the ASGI app call
:func:`one_blas_thread` first; a library user's process is left alone.
"""

from __future__ import annotations

import os
import sys

VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> bool:
    """Ask for one BLAS thread (``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` set to 1),
    unless one of :data:`VARIABLES` is already set: an operator's own choice is kept whole.
    Takes effect only before numpy is first imported; returns whether it still could."""
    if "numpy" in sys.modules:
        return False
    if not any(name in os.environ for name in VARIABLES):
        os.environ["OPENBLAS_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"
    return True
