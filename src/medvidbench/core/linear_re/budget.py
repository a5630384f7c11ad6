"""Python's own ``re`` first, under a time budget; the linear engine when the budget runs out.

``re`` gives, by definition, the results the engine reproduces, and on ordinary answers it is
about ten times faster than the engine (whose loop runs in the interpreter). Its danger is the
rare answer that makes it backtrack for minutes. CPython's matcher checks for signals every
4,096 steps, so a timer whose handler raises stops it: inside :func:`budgeted`, each match call
first runs ``re`` with ``BASE + PER_CHARACTER * len(text)`` seconds of wall time (10 ms plus
2 us per character); when that runs out the call is abandoned (nothing of it is kept) and the
engine matches the text, exactly and in linear time. After ``TIMEOUTS_PER_BATCH`` timeouts in
one ``budgeted`` block the rest of the block goes straight to the engine, so a file of hostile
answers costs at most that many budgets on top of the engine's own time.

The timer is used only where it cannot disturb anything else in the process: in the main thread,
on a platform with ``signal.setitimer``, while ``SIGALRM`` is at its default action and no
real-time timer (or ``signal.alarm``) is running. Anywhere else, and outside a ``budgeted``
block, every text goes to the engine. The handler is installed when the block starts and the
previous one restored when it ends. It raises only in the call's own frames: when the time is
up while someone else's Python code runs inside the call (a garbage collection's callbacks,
started by the call's allocations), it sets the timer again a millisecond later, since an
exception raised in a callback is printed and dropped, never reaching the call.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

T = TypeVar("T")

# Seconds every call may take in re: ordinary answers take microseconds, but the call may wait
# for the interpreter lock while another thread holds it (5 ms by default: the switch interval).
BASE = 0.01
PER_CHARACTER = 2e-6  # and per character: about a fifth of the engine's worst case
TIMEOUTS_PER_BATCH = 16
RETRY = 0.001  # seconds: the handler fired in code not the call's own (see _in_the_call)


class _OutOfTime(BaseException):
    """Raised by the timer's handler inside an armed call (never escapes this module)."""


class Budget:
    """One ``budgeted`` block: its thread, the call in progress (armed, and until when), when
    the timer will fire (if it is running), and the block's timeouts so far.

    The timer is not set and cleared around every call (two system calls each, as much time as
    ``re`` takes on a typical answer): a call that finds it running, due no later than the
    call's own deadline, only records that deadline. When the timer fires during a call whose
    deadline is still ahead, it is set again for the rest; when it fires between calls, nothing
    happens and it stays off until the next call sets it. So it fires at most about once per
    ``BASE`` while calls keep coming, every call is stopped at its own deadline, and it never
    fires after the block (which clears it).
    """

    __slots__ = ("armed", "deadline", "expiry", "running", "thread", "timeouts", "tried")

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.armed = False
        self.deadline = 0.0  # the armed call's, on the time.perf_counter() clock
        self.expiry = 0.0  # when the running timer fires, on the same clock
        self.running = False
        self.timeouts = 0
        self.tried = 0  # calls given to re (for tests and benchmarks)

    def attempt(self, call: Callable[[str], T], text: str) -> T | None:
        """``call(text)`` (a method of a compiled ``re`` pattern) within its budget, or None
        when it ran out of time, or may not be tried here (another thread, too many timeouts)."""
        if (
            self.armed
            or self.timeouts >= TIMEOUTS_PER_BATCH
            or threading.get_ident() != self.thread
        ):
            # armed: a parse from inside a call (a collection's callback): the engine matches
            # it, leaving the outer call's deadline armed
            return None
        self.tried += 1
        budget = BASE + PER_CHARACTER * len(text)
        # The handler raises only while a call is armed, and a call is armed only inside the
        # inner try, whose every instruction the outer one covers: the exception cannot escape.
        try:
            try:
                deadline = time.perf_counter() + budget
                self.deadline = deadline
                self.armed = True
                if not self.running or self.expiry > deadline:
                    self.running = True
                    self.expiry = deadline
                    signal.setitimer(signal.ITIMER_REAL, budget)
                return call(text)
            finally:
                self.armed = False  # a signal after this line does nothing
        except _OutOfTime:
            self.armed = False  # raised before the line above: the timer is off by now
            self.timeouts += 1
            return None

    def _expire(self, signum: int, frame: FrameType | None) -> None:
        self.running = False
        if not self.armed:
            return  # between calls: the timer stays off until the next call
        left = self.deadline - time.perf_counter()
        if left > 0:  # set by an earlier call: the rest of this call's budget
            self._set(left)
            return
        if not _in_the_call(frame):
            # Someone else's code runs inside the call (a collection's callbacks): an exception
            # raised there would be printed and dropped, and the timeout lost. Try again soon.
            self._set(RETRY)
            return
        raise _OutOfTime

    def _set(self, seconds: float) -> None:
        self.running = True
        self.expiry = time.perf_counter() + seconds
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def stop(self) -> None:
        """Clear the timer (the block is over)."""
        self.armed = False
        self.running = False
        signal.setitimer(signal.ITIMER_REAL, 0)


def _in_the_call(frame: FrameType | None) -> bool:
    """Whether the handler interrupts the armed call itself: ``attempt``, the ``re`` method it
    called, or this package's helpers between them. Python code of anyone else can run inside
    the call too (``gc.callbacks`` and weakref callbacks, when the call's allocations start a
    collection), and an exception raised in a callback never reaches ``attempt``."""
    while frame is not None:
        if frame.f_code is _ATTEMPT:
            return True
        if os.path.dirname(frame.f_code.co_filename) != _HERE:
            return False
        frame = frame.f_back
    return False


_ATTEMPT = Budget.attempt.__code__
# The package's folder as its frames name it: from a code object, not __file__, which the
# loader may spell otherwise (an unnormalised sys.path entry, a sourceless install).
_HERE = os.path.dirname(_ATTEMPT.co_filename)
_active: Budget | None = None


def active() -> Budget | None:
    """The ``budgeted`` block running now, if any (the patterns ask on every call)."""
    return _active


def _timer_free() -> bool:
    """Whether a real-time timer of our own disturbs nothing (see the module docstring)."""
    if not hasattr(signal, "setitimer"):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    unused = signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    return unused and signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


@contextmanager
def budgeted() -> Iterator[Budget | None]:
    """Match with ``re`` under a time budget inside this block (see the module docstring).

    Gives the block's :class:`Budget`, or None where the timer may not be used (the engine
    matches everything then). Nested blocks share the outer one.
    """
    global _active
    if _active is not None or not _timer_free():
        yield _active if _active is not None and _active.thread == threading.get_ident() else None
        return
    budget = Budget()
    previous = signal.signal(signal.SIGALRM, budget._expire)
    _active = budget
    try:
        yield budget
    finally:
        _active = None
        budget.stop()
        signal.signal(signal.SIGALRM, previous)
