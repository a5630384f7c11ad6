"""A large community board for the benchmarks: scored submissions with random metrics."""

from __future__ import annotations

import random
from typing import Any


def populate_board(
    runtime: Any, benchmark_id: int, user_id: int, entries: int, seed: int = 0
) -> None:
    """Insert ``entries`` scored submissions, their evaluations and board entries directly
    (as scoring would leave them); about 10 % of metrics are missing."""
    from sqlalchemy import select

    from medvidbench.benchmarks.medvidbench.metrics import METRIC_KEYS, SCORER_VERSION
    from medvidbench.server.store.db import transaction
    from medvidbench.server.store.models import Board, Entry, Evaluation, Submission

    rng = random.Random(seed)
    with transaction(runtime.sessions) as session:
        board = session.scalar(
            select(Board).where(Board.benchmark_id == benchmark_id, Board.kind == "community")
        )
        for i in range(entries):
            name, url = f"model-{i}", f"https://example.org/models/{i}"
            sub = Submission(
                benchmark_id=benchmark_id,
                user_id=user_id,
                model_name=name,
                model_key=name,
                file_sha256=f"{i:064x}",
                status="scored",
                model_url=url,
            )
            session.add(sub)
            session.flush()
            metrics = {
                k: (rng.uniform(1, 5) if k.endswith("llm") else rng.random())
                if rng.random() > 0.1
                else None
                for k in METRIC_KEYS
            }
            session.add(
                Evaluation(
                    submission_id=sub.id,
                    profile="leaderboard-v1",
                    scorer_version=SCORER_VERSION,
                    metrics=metrics,
                    per_dataset={},
                    per_task={},
                )
            )
            session.add(
                Entry(
                    board_id=board.id,
                    submission_id=sub.id,
                    model_name=name,
                    model_key=name,
                    team_name=f"Team {i % 37}",
                    model_url=url,
                )
            )
