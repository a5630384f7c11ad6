"""A budget of CPU time for one piece of work on one thread (a scoring job on a server).

Every answer parser reads its text in time linear in the text's length, and each task bounds
an answer's length (``Task.answer_chars``), so one answer costs a bounded time; a file of
thousands of hostile answers can still cost minutes. Inside :func:`limited`, the thread's CPU
time is checked where such work happens (each text a pattern scans, each task scored): past
the budget, :class:`CpuBudgetError` stops the work with a message that says so, instead of a
worker busy for an hour. Outside a budget the checks cost a thread-local look-up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from medvidbench.core.errors import MedVidBenchError

_local = threading.local()


class CpuBudgetError(MedVidBenchError):
    """The work used its CPU budget up: the answers cost too much to read."""

    http_status = 422


@contextmanager
def limited(seconds: float | None, what: str) -> Iterator[None]:
    """Run the block with ``seconds`` of this thread's CPU time (None or 0: no limit)."""
    if not seconds:
        yield
        return
    outer = getattr(_local, "budget", None)
    _local.budget = (time.thread_time() + seconds, seconds, what)
    try:
        yield
    finally:
        _local.budget = outer


def check() -> None:
    """Raise :class:`CpuBudgetError` when this thread's budget is used up."""
    budget = getattr(_local, "budget", None)
    if budget is not None and time.thread_time() > budget[0]:
        _local.budget = None  # said once: what cleans up after the error is not stopped too
        raise CpuBudgetError(
            f"{budget[2]} was stopped after {budget[1]:,.0f} s of CPU time: the answers cost too "
            "much to read (each task's answer format is short; see the validation warnings "
            "for answers that were cut); nothing was scored"
        )
