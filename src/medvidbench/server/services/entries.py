"""Curating the official board: promoting a submission, adding a result reported elsewhere,
removing an entry (admins only, audited).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from sqlalchemy import select

from medvidbench.core.errors import ConflictError, NotFoundError, UsageError
from medvidbench.server.lifecycle import ON_BOARD
from medvidbench.server.roles import Role
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.accounts import require_role
from medvidbench.server.services.audit import audit
from medvidbench.server.services.board_reads import find_board
from medvidbench.server.services.names import on_board
from medvidbench.server.services.submissions import clean_url, model_key
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.store import board_cache
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import Board, Entry, Submission, User


def promote(
    runtime: Runtime,
    actor: User,
    submission_id: int,
    verified: bool = True,
    verified_date: str | None = None,
) -> Entry:
    """Put a scored, public, shown community submission on the official board.

    Raises:
        NotFoundError: no such scored submission.
        ConflictError: its submitter withdrew it or keeps it private, or an admin hid it (an
            entry of it would show nowhere and could not be removed from the board's page).
    """
    require_role(actor, Role.ADMIN)
    with transaction(runtime.sessions) as session:
        # locked: a withdrawal at the same moment waits, then this sees it
        sub = session.get(Submission, submission_id, with_for_update=True)
        if sub is None or sub.status not in ON_BOARD:
            raise NotFoundError(f"no scored submission {submission_id}")
        _check_promotable(sub)
        board = find_board(session, sub.benchmark_id, "official")
        if session.scalar(
            select(Entry.id).where(Entry.board_id == board.id, Entry.model_key == sub.model_key)
        ):
            raise ConflictError(f"{sub.model_name!r} is already on the official board")
        entry = Entry(
            board_id=board.id,
            submission_id=sub.id,
            model_name=sub.model_name,
            model_key=sub.model_key,
            model_url=sub.model_url,
            verified=verified,
            team_name=sub.team.name if sub.team else sub.organisation,
            verified_date=verified_date or datetime.now(UTC).date().isoformat(),
        )
        session.add(entry)
        session.flush()
        board_cache.bump(session, sub.benchmark_id)
        audit(
            session,
            actor,
            "entry.promote",
            f"entry:{entry.id}",
            submission=sub.id,
            model=sub.model_name,
        )
        return entry


def _check_promotable(sub: Submission) -> None:
    if sub.visibility == "withdrawn":
        raise ConflictError(
            f"submission {sub.id} was withdrawn by its submitter (final): it cannot be promoted"
        )
    if sub.visibility == "private":
        raise ConflictError(
            f"submission {sub.id} is private (its submitter's choice): it can be promoted "
            "once they publish it"
        )
    if sub.hidden:
        raise ConflictError(
            f"submission {sub.id} is hidden from every board: unhide it first to promote it"
        )


def add_reported(
    runtime: Runtime,
    actor: User | None,
    model_name: str,
    team: str,
    metrics: Mapping[str, float | None],
    source: str,
    kind: str = "official",
    model_url: str | None = None,
    verified: bool = False,
    baseline: bool = False,
    date: str | None = None,
    benchmark: str | None = None,
) -> Entry:
    """Add numbers computed elsewhere (a paper, the old leaderboard), flagged as reported, to
    a board of ``benchmark`` (a slug; None: the default benchmark)."""
    if actor is not None:
        require_role(actor, Role.ADMIN)
    definition = runtime.definition(benchmark)
    unknown = set(metrics) - set(definition.metric_keys)
    if unknown:
        raise UsageError(f"unknown metric(s) {', '.join(sorted(unknown))}")
    for key, value in metrics.items():
        if value is not None:
            low, high = definition.metrics_by_key[key].bounds
            if not low <= float(value) <= high:
                raise UsageError(f"{key} = {value} is outside {low:g}-{high:g}")
    bench = current_benchmark(runtime, definition.slug)
    with transaction(runtime.sessions) as session:
        board = find_board(session, bench.id, kind)
        key = model_key(model_name)
        if on_board(session, board.id, key):
            raise ConflictError(f"{model_name!r} is already on the {kind} board")
        entry = Entry(
            board_id=board.id,
            model_name=" ".join(model_name.split())[:120],
            model_key=key,
            team_name=team[:120],
            model_url=clean_url(model_url),
            reported_metrics=dict(metrics),
            reported=True,
            verified=verified,
            baseline=baseline,
            source=source[:300],
            verified_date=date,
        )
        session.add(entry)
        session.flush()
        board_cache.bump(session, bench.id)
        audit(session, actor, "entry.add", f"entry:{entry.id}", model=model_name, board=kind)
        return entry


def remove_entry(runtime: Runtime, actor: User, entry_id: int) -> None:
    require_role(actor, Role.ADMIN)
    with transaction(runtime.sessions) as session:
        entry = session.get(Entry, entry_id)
        if entry is None:
            raise NotFoundError(f"no entry {entry_id}")
        audit(session, actor, "entry.remove", f"entry:{entry_id}", model=entry.model_name)
        board = session.get(Board, entry.board_id)
        session.delete(entry)
        if board is not None:
            board_cache.bump(session, board.benchmark_id)
