"""The board version a web process holds for the page every visitor sees: trusted for a
window, read again by one request at a time, and dropped at once after a change this process
committed."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from medvidbench.server.store import board_cache
from medvidbench.server.store.board_cache import RecentVersions


class Clock:
    """Time that moves only when a test says so: a loaded machine cannot pass a window."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_the_version_is_held_for_the_window_then_read_by_one_request_while_others_wait_not() -> (
    None
):
    reads: list[int] = []
    clock = Clock()
    memo = RecentVersions(0.2, clock=clock)

    def read() -> tuple[int, int]:
        reads.append(1)
        return (1, len(reads))

    assert memo.recent("medvidbench") is None  # nothing held: read
    assert memo.get("medvidbench", read) == (1, 1)
    assert memo.recent("medvidbench") == (1, 1) and memo.get("medvidbench", read) == (1, 1)
    assert len(reads) == 1

    clock.advance(0.25)  # the window has passed
    assert memo.recent("medvidbench") is None  # this request claims the read...
    for _ in range(50):  # ...and fifty others are answered with the version held meanwhile
        assert memo.recent("medvidbench") == (1, 1)
    assert memo.get("medvidbench", read) == (1, 2) and len(reads) == 2
    assert memo.recent("medvidbench") == (1, 2)

    clock.advance(0.25)
    assert memo.recent("medvidbench") is None  # claimed, but the claimant never reads...
    clock.advance(0.2)  # ...so after twice the window nobody is given the old version
    assert memo.recent("medvidbench") is None


def test_a_failed_read_releases_its_claim() -> None:
    clock = Clock()
    memo = RecentVersions(0.05, clock=clock)
    memo.get("b", lambda: (1, 1))
    clock.advance(0.06)
    assert memo.recent("b") is None

    def broken() -> tuple[int, int]:
        raise OSError("database away")

    with pytest.raises(OSError):
        memo.get("b", broken)
    assert memo.recent("b") is None  # not given the old version as if a read were under way


def test_a_change_committed_by_this_process_is_seen_at_once_a_rolled_back_one_not() -> None:
    engine = create_engine("sqlite://")
    from medvidbench.server.store.models import Base, TestSet

    Base.metadata.create_all(engine, tables=[TestSet.__table__])
    memo = RecentVersions(3600)
    memo.get("b", lambda: (1, 0))
    with Session(engine) as session:
        board_cache.bump(session, 1)
        session.rollback()
    assert memo.recent("b") == (1, 0)  # nothing committed: still held
    with Session(engine) as session:
        board_cache.bump(session, 1)
        assert memo.recent("b") == (1, 0)  # not yet committed
        session.commit()
    assert memo.recent("b") is None  # committed here: read again at once
    assert memo.get("b", lambda: (1, 1)) == (1, 1)
    assert memo.recent("b") == (1, 1)


def test_zero_reads_every_time() -> None:
    memo = RecentVersions(0)
    reads: list[int] = []
    for _ in range(3):
        assert memo.recent("b") is None
        memo.get("b", lambda: reads.append(1) or (1, 1))  # type: ignore[func-returns-value]
    assert len(reads) == 3


def test_every_commit_of_one_session_that_changes_a_board_is_counted() -> None:
    engine = create_engine("sqlite://")
    from medvidbench.server.store.models import Base, TestSet

    Base.metadata.create_all(engine, tables=[TestSet.__table__])
    memo = RecentVersions(3600)
    with Session(engine) as session:
        for generation in range(3):
            memo.get("b", lambda g=generation: (1, g))  # type: ignore[misc]
            with session.begin():
                board_cache.bump(session, 1)
            assert memo.recent("b") is None  # the second and third commit too
        with session.begin():
            board_cache.bump(session, 1)
            session.rollback()
        memo.get("b", lambda: (1, 9))
        with session.begin():
            pass  # a later commit of the same session changes nothing
        assert memo.recent("b") == (1, 9)


def test_a_claim_made_while_a_fresh_version_is_returned_is_released() -> None:
    clock = Clock()
    memo = RecentVersions(0.1, clock=clock)
    memo.get("b", lambda: (1, 1))
    clock.advance(0.12)
    assert memo.recent("b") is None  # claimed...
    memo.get("b", lambda: (1, 2))  # ...read by the claimant
    memo._reading.add("b")  # a claim that arrives in the gap after the read was stored
    assert memo.get("b", lambda: (1, 3)) == (1, 2)  # fresh: returned, and the claim released
    clock.advance(0.12)
    assert memo.recent("b") is None  # the next window's first caller reads, not the held one


def test_an_older_read_never_replaces_a_newer_one() -> None:
    memo = RecentVersions(0)

    def slow_old() -> tuple[int, int]:
        memo.get("b", lambda: (1, 2))  # a newer read starts and ends meanwhile
        return (1, 1)

    assert memo.get("b", slow_old) == (1, 1)
    memo.seconds = 3600
    assert memo.recent("b") == (1, 2)
