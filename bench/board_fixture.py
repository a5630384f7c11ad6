"""A large community board for the benchmarks: scored submissions with random metrics."""

from __future__ import annotations

import random
from typing import Any


def populate_board(
    runtime: Any,
    benchmark_id: int,
    user_id: int,
    entries: int,
    seed: int = 0,
    replicates: int = 0,
    first: int = 0,
) -> None:
    """Insert ``entries`` scored submissions, their evaluations and board entries directly
    (as scoring would leave them, the boards' generation bumped); about 10 % of metrics are
    missing. With ``replicates``, each evaluation also stores a bootstrap of that many
    replicates (the metric plus noise of a size real test sets give), as scoring with intervals
    would. Models are numbered from ``first`` (to add more to a board already filled)."""
    from sqlalchemy import select

    from medvidbench.benchmarks.medvidbench.metrics import METRIC_KEYS, SCORER_VERSION
    from medvidbench.server.store.board_cache import bump
    from medvidbench.server.store.db import transaction
    from medvidbench.server.store.models import Board, Entry, Evaluation, Submission

    rng = random.Random(seed)
    with transaction(runtime.sessions) as session:
        board = session.scalar(
            select(Board).where(Board.benchmark_id == benchmark_id, Board.kind == "community")
        )
        for i in range(first, first + entries):
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
                    statistics=_statistics(metrics, replicates, i) if replicates else None,
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
        bump(session, benchmark_id)  # as scoring does: the boards are ranked again


def _statistics(metrics: dict[str, float | None], replicates: int, seed: int) -> dict[str, Any]:
    import numpy as np

    from medvidbench.core.statistics import Bootstrap, interval

    keys = [k for k, v in metrics.items() if v is not None]
    rng = np.random.default_rng(seed)
    values = np.array([metrics[k] for k in keys]) + rng.normal(0, 0.015, (replicates, len(keys)))
    return Bootstrap(
        0,
        replicates,
        0.95,
        "bench",
        4000,
        keys,
        values,
        {k: interval(values[:, j]) for j, k in enumerate(keys)},
    ).to_dict(with_replicates=True)
