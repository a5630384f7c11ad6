"""Ranked boards. Every board is ranked within itself (metrics.md §6). A row's metrics come from
its submission's current evaluation (judged if available), or, for numbers we did not compute,
from what was reported (flagged ``reported`` with its source). Pending judged metrics are
missing, not zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from medvidbench.core.errors import NotFoundError
from medvidbench.core.ranking import rank_rows
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import board_cache
from medvidbench.server.services.evaluations import current_evaluations
from medvidbench.server.services.submissions import current_benchmark
from medvidbench.server.store.models import Benchmark, Board, Entry, Submission

KINDS = ("official", "community")


def find_board(session: Session, benchmark_id: int, kind: str) -> Board:
    if kind not in KINDS:
        raise NotFoundError(f"no board {kind!r}; expected official or community")
    board = session.scalar(
        select(Board).where(Board.benchmark_id == benchmark_id, Board.kind == kind)
    )
    if board is None:
        raise NotFoundError(f"no {kind} board")
    return board


@dataclass(slots=True)
class BoardRow:
    """One ranked row, ready for a page, the API or a CSV file."""

    rank: int
    entry_id: int
    model_name: str
    team: str
    model_url: str | None
    metrics: dict[str, float | None]
    average_rank: float
    metrics_present: int
    normalised_average: float | None
    badges: list[str]
    submission_id: int | None
    status: str
    date: str
    profile: str | None
    scorer_version: str | None
    judge: dict[str, Any] | None
    source: str | None


def board_rows(
    runtime: Runtime, kind: str, benchmark_id: int | None = None, slug: str | None = None
) -> list[BoardRow]:
    """The ranked rows of a board of a test set (default: the current one of ``slug``),
    computed once per change of its boards, then reused; callers must not modify them."""
    bench_id = benchmark_id or current_benchmark(runtime, slug).id
    if kind not in KINDS:
        raise NotFoundError(f"no board {kind!r}; expected official or community")
    with runtime.sessions() as session:
        current = board_cache.generation(session, bench_id)
    return runtime.boards.get(
        ("rows", bench_id, kind), current, lambda: _ranked_rows(runtime, kind, bench_id)
    )


def _ranked_rows(runtime: Runtime, kind: str, bench_id: int) -> list[BoardRow]:
    with runtime.sessions() as session:
        board = find_board(session, bench_id, kind)
        definition = runtime.definition(
            session.scalar(select(Benchmark.slug).where(Benchmark.id == bench_id))
        )
        # Plain rows of just the columns a board shows: no ORM objects, no per-task JSON.
        entries = session.execute(
            select(
                Entry.id,
                Entry.submission_id,
                Entry.model_name,
                Entry.team_name,
                Entry.model_url,
                Entry.reported_metrics,
                Entry.reported,
                Entry.verified,
                Entry.baseline,
                Entry.source,
                Entry.verified_date,
                Entry.created_at,
            ).where(Entry.board_id == board.id)
        ).all()
        ids = [e.submission_id for e in entries if e.submission_id]
        subs = {
            s.id: s
            for start in range(0, len(ids), 500)
            for s in session.execute(
                select(
                    Submission.id,
                    Submission.status,
                    Submission.missing_tasks,
                    Submission.created_at,
                ).where(Submission.id.in_(ids[start : start + 500]))
            )
        }
        evals = current_evaluations(session, ids, definition)
    keys = definition.metric_keys
    raw = []
    for e in entries:
        ev = evals.get(e.submission_id) if e.submission_id else None
        metrics = dict.fromkeys(keys)
        metrics.update((ev.metrics if ev else e.reported_metrics) or {})
        raw.append((e, ev, {k: metrics.get(k) for k in keys}))
    ranked = rank_rows(
        [(i, e.model_name, m) for i, (e, _, m) in enumerate(raw)], definition.metrics
    )
    rows = []
    for r in ranked:
        e, ev, metrics = raw[int(r.key)]  # type: ignore[call-overload]
        sub = subs.get(e.submission_id) if e.submission_id else None
        badges = [
            b
            for b, on in (
                ("verified", e.verified),
                ("reported", e.reported),
                ("baseline", e.baseline),
                ("partial", bool(sub and sub.missing_tasks)),
                # public test labels: the submitter could have seen the answers (About page)
                ("open labels", definition.labels == "public" and not e.reported),
            )
            if on
        ]
        # A reported row has its source's date or none: the day it was seeded here means nothing.
        date = e.verified_date or (
            "" if e.reported else (sub.created_at if sub else e.created_at).date().isoformat()
        )
        rows.append(
            BoardRow(
                rank=r.rank,
                entry_id=e.id,
                model_name=e.model_name,
                team=e.team_name,
                model_url=e.model_url,
                metrics=metrics,
                average_rank=r.average_rank,
                metrics_present=r.metrics_present,
                normalised_average=r.normalised_average,
                badges=badges,
                submission_id=e.submission_id,
                status=sub.status if sub else "reported",
                date=date,
                profile=ev.profile if ev else None,
                scorer_version=ev.scorer_version if ev else None,
                judge=ev.judge if ev else None,
                source=e.source,
            )
        )
    return rows
