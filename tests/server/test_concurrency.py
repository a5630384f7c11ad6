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
    assert [r.rank for r in rows] == list(range(1, 51))
