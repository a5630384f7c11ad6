"""Many submissions at once: none lost, none duplicated (SQLite and PostgreSQL)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import func, select

from medvidbench.server.runtime import Runtime
from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.models import Evaluation, Submission
from tests.server.conftest import make_user, variants


def test_fifty_concurrent_submissions(runtime: Runtime, synthetic: dict[str, Path]) -> None:
    users = [make_user(runtime, f"user{i}", team=f"Team {i}") for i in range(5)]
    files = variants(synthetic["strong"], 50)
    with ThreadPoolExecutor(max_workers=16) as pool:
        subs = list(
            pool.map(lambda i: submit(runtime, users[i % 5], files[i], f"model-{i}"), range(50))
        )
    assert len({s.id for s in subs}) == 50
    with runtime.sessions() as session:
        statuses = dict(
            session.execute(
                select(Submission.status, func.count()).group_by(Submission.status)
            ).all()
        )
        evaluations = session.scalar(select(func.count()).select_from(Evaluation))
    assert statuses == {"scored": 50}
    assert evaluations == 50
    rows = board_rows(runtime, "community")
    assert len(rows) == 50 and sorted(r.model_name for r in rows) == sorted(
        f"model-{i}" for i in range(50)
    )
    assert [r.place for r in rows] == list(range(1, 51))


def test_a_withdrawal_sent_with_a_publish_is_never_undone(runtime: Runtime) -> None:
    """Withdraw and publish sent at once (each in its own thread and session): whichever
    comes second sees the first's result. Before, PostgreSQL read both rows unlocked and
    5-11 of 20 rounds ended public after the withdrawal had been accepted."""
    import threading

    from medvidbench.core.errors import ConflictError
    from medvidbench.server.services.submissions import current_benchmark
    from medvidbench.server.services.visibility import set_visibility
    from medvidbench.server.store.db import transaction

    owner = make_user(runtime, "changeable", team="Team V")
    bench = current_benchmark(runtime)
    rounds = 20
    with transaction(runtime.sessions) as session:
        rows = [
            Submission(
                benchmark_id=bench.id,
                user_id=owner.id,
                model_name=f"run {n}",
                model_key=f"run {n}",
                file_sha256=f"{n:064x}",
                status="scored",
                visibility="private",
            )
            for n in range(rounds)
        ]
        session.add_all(rows)

    def change(sid: int, wanted: str, start: threading.Barrier, outcome: dict[str, str]) -> None:
        start.wait()
        try:
            set_visibility(runtime, owner, sid, wanted)
            outcome[wanted] = "accepted"
        except ConflictError:
            outcome[wanted] = "refused"

    undone = 0
    for row in rows:
        start, outcome = threading.Barrier(2), dict[str, str]()
        threads = [
            threading.Thread(target=change, args=(row.id, wanted, start, outcome))
            for wanted in ("withdrawn", "public")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with runtime.sessions() as session:
            final = session.get(Submission, row.id).visibility  # type: ignore[union-attr]
        assert outcome["withdrawn"] == "accepted"  # withdrawing is always possible
        undone += final != "withdrawn"
    assert undone == 0, f"{undone} of {rounds} withdrawals were undone by a publish"
