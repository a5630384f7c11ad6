"""What a board is ranked from, read once per change of its benchmark: its entries, their
submissions and the evaluation each shows, as plain rows (no ORM objects).

An evaluation is written once and never changed, so what a board needs of it (its metrics,
rounded as the board compares them, and the rank codes of its stored bootstrap, some 50 KB of
base64) is decoded the first time a process reads it and kept with the board: a board read again
after a change queries only which evaluation each entry shows, and decodes only those it has not
seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection, String, select, type_coerce
from sqlalchemy.orm import Session

from medvidbench.core.errors import NotFoundError
from medvidbench.core.ranking import rounded_values
from medvidbench.server.lifecycle import ON_BOARD
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import private_runs
from medvidbench.server.services.evaluations import board_picks
from medvidbench.server.store.models import Board, Entry, Evaluation, Submission, TestSet

if TYPE_CHECKING:
    from medvidbench.core.benchmark import Benchmark

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


@dataclass(frozen=True, slots=True)
class Replicates:
    """What ranking needs of one stored evaluation's bootstrap, decoded once."""

    stored: bool  # a bootstrap was stored (with or without its replicates)
    stamp: tuple[Any, Any, Any] | None
    intervals: dict[str, Any] | None
    # ranked metrics x the replicates a board ranks with (core.standings.rank_replicates): their
    # rank codes (the point value's where the metric has no replicates)
    codes: np.ndarray | None
    # drawn with a seed anyone knows on a benchmark whose labels are hidden: not used
    # (core.statistics.usable)
    withheld: bool = False


@dataclass(frozen=True, slots=True)
class Shown:
    """The evaluation a board shows for a submission, as the board uses it (shared by every read
    of the board in this process: callers must not modify it)."""

    id: int
    created_at: Any  # with the id, tells a reused id apart (as the database hands it over)
    metrics: dict[str, float | None]  # every metric key of the benchmark
    rounded: list[float]  # the metrics as the board compares them (core.ranking.rounded_values)
    judge: dict[str, Any] | None
    profile: str
    scorer_version: str
    replicates: Replicates


@dataclass(slots=True)
class EntryRow:
    """The columns of a board entry a board shows."""

    id: int
    submission_id: int | None
    model_name: str
    team_name: str
    model_url: str | None
    reported_metrics: dict[str, Any] | None
    reported: bool
    verified: bool
    baseline: bool
    source: str | None
    verified_date: str | None
    created_at: Any  # as the database hands it over: see :func:`day`


@dataclass(slots=True)
class SubmissionRow:
    """The columns of an entry's submission a board shows."""

    id: int
    status: str
    missing_tasks: list[str] | None
    created_at: Any  # as the database hands it over: see :func:`day`
    hidden: bool
    visibility: str
    # runs its team or its submitter had scored on this benchmark, not public when it was
    # published: what a reader weighs a published score against (best of N; private_runs.py)
    private_runs: int = 0


@dataclass(slots=True)
class BoardRead:
    """What a board is ranked from: plain rows of just the columns it shows."""

    definition: Any
    demo: bool
    entries: list[EntryRow]  # those of submissions off the board left out
    subs: dict[int, SubmissionRow]  # by id
    evals: dict[int, Shown]  # the evaluation shown, by submission id
    metrics: list[dict[str, float | None]]  # each entry's, every metric key present
    rounded: list[list[float]]  # each entry's metrics as the board compares them
    prepared: dict[int, Replicates]  # each shown evaluation's replicates, by its id


def read_board(runtime: Runtime, kind: str, bench_id: int) -> BoardRead:
    with runtime.sessions() as session:
        board = find_board(session, bench_id, kind)
        slug, demo = session.execute(
            select(TestSet.slug, TestSet.is_demo).where(TestSet.id == bench_id)
        ).one()
        definition = runtime.definition(slug)
        # each query joined on the board's entries (no list of ids to send); rows are copied by
        # position into plain records, whose attributes cost a tenth of a database row's
        connection = session.connection()
        entries = _entry_rows(connection, board.id)
        subs = _submission_rows(connection, board.id, bench_id)
        # a submission an administrator hid, or its submitter made private or withdrew, is off
        # every board (its page and scores are kept); so is one whose judging failed for good
        # (failed is a private state that holds no name and counts in no quota: see lifecycle)
        hidden = {
            i
            for i, s in subs.items()
            if s.hidden or s.visibility != "public" or s.status not in ON_BOARD
        }
        entries = [e for e in entries if e.submission_id not in hidden]
        picks = board_picks(session, board.id, definition)
        held: dict[int, Shown] = runtime.boards.get(("shown", bench_id, kind), 0, dict)
        evals = _shown_evaluations(connection, picks, held, definition)
    metrics, rounded = [], []
    for e in entries:
        shown = evals.get(e.submission_id) if e.submission_id else None
        if shown is not None:
            metrics.append(shown.metrics)
            rounded.append(shown.rounded)
        else:
            found = e.reported_metrics or {}
            metrics.append({k: found.get(k) for k in definition.metric_keys})
            rounded.append(rounded_values(found, definition.metrics))
    prepared = {shown.id: shown.replicates for shown in evals.values()}
    return BoardRead(definition, demo, entries, subs, evals, metrics, rounded, prepared)


def _entry_rows(connection: Connection, board_id: int) -> list[EntryRow]:
    query = select(
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
        type_coerce(Entry.created_at, String),
    ).where(Entry.board_id == board_id)
    return [EntryRow(*row) for row in connection.execute(query)]


def _submission_rows(
    connection: Connection, board_id: int, bench_id: int
) -> dict[int, SubmissionRow]:
    query = (
        select(
            Submission.id,
            Submission.status,
            Submission.missing_tasks,
            type_coerce(Submission.created_at, String),
            Submission.hidden,
            Submission.visibility,
            Submission.user_id,
            Submission.team_id,
        )
        .join(Entry, Entry.submission_id == Submission.id)
        .where(Entry.board_id == board_id)
    )
    found = list(connection.execute(query))
    rows = {row[0]: SubmissionRow(*row[:6]) for row in found}
    owners = [(row[0], row[6], row[7]) for row in found]
    for sub_id, tries in private_runs.counts(connection, owners, bench_id).items():
        rows[sub_id].private_runs = tries
    return rows


def _shown_evaluations(
    connection: Connection,
    picks: dict[int, tuple[int, Any]],
    held: dict[int, Shown],
    definition: Benchmark,
) -> dict[int, Shown]:
    """The evaluation each submission shows (``picks``: submission -> (evaluation, created)),
    decoded once per process: those ``held`` from an earlier read are reused, the others read
    a hundred at a time; ``held`` then holds exactly these."""
    evals: dict[int, Shown] = {}
    missing = []
    for sub_id, (ev_id, created_at) in picks.items():
        shown = held.get(ev_id)
        if shown is not None and shown.created_at == created_at:
            evals[sub_id] = shown
        else:
            missing.append((ev_id, sub_id, created_at))
    for start in range(0, len(missing), 100):
        part = {
            ev_id: (sub_id, created_at)
            for ev_id, sub_id, created_at in missing[start : start + 100]
        }
        for row in connection.execute(
            select(
                Evaluation.id,
                Evaluation.metrics,
                Evaluation.judge,
                Evaluation.profile,
                Evaluation.scorer_version,
                Evaluation.statistics,
            ).where(Evaluation.id.in_(part))
        ):
            sub_id, created_at = part[row.id]
            evals[sub_id] = _shown(row, created_at, definition)
    held.clear()
    held.update((shown.id, shown) for shown in evals.values())
    return evals


def day(stored: Any) -> str:
    """The ISO day of a time a board reads as the database hands it over, not parsed by the
    ORM (parsing a thousand times costs milliseconds): SQLite's text (``2026-11-25 09:41:...``)
    or the driver's datetime (PostgreSQL).

    Examples:
        >>> day("2026-11-25 09:41:07.123456")
        '2026-11-25'
        >>> from datetime import datetime
        >>> day(datetime(2026, 11, 25, 9, 41))
        '2026-11-25'
    """
    return stored[:10] if isinstance(stored, str) else str(stored.date().isoformat())


def _shown(row: Any, created_at: Any, definition: Any) -> Shown:
    found = row.metrics or {}
    return Shown(
        id=row.id,
        created_at=created_at,
        metrics={k: found.get(k) for k in definition.metric_keys},
        rounded=rounded_values(found, definition.metrics),
        judge=row.judge,
        profile=row.profile,
        scorer_version=row.scorer_version,
        replicates=prepare_replicates(row.statistics, found, definition),
    )


def prepare_replicates(
    stats: dict[str, Any] | None, metrics: dict[str, Any], definition: Any
) -> Replicates:
    """The rank codes of the stored replicates an evaluation's board ranks with
    (:func:`~medvidbench.core.standings.rank_replicates`; its point values where a metric has
    none)."""
    from medvidbench.core.standings import rank_codes, rank_replicates
    from medvidbench.core.statistics import Bootstrap, usable

    if stats is not None and usable(stats, definition.labels) is None:
        return Replicates(True, None, None, None, withheld=True)
    stamp = Bootstrap.stamp(stats)
    if stats is None or stamp is None:
        return Replicates(stats is not None, stamp, None, None)
    keys = list(definition.metric_keys)
    metrics = metrics or {}
    clusters = stats.get("clusters")
    values = np.empty((rank_replicates(int(stats["replicates"]), clusters), len(keys)))
    values[:] = [np.nan if metrics.get(k) is None else float(metrics[k]) for k in keys]
    present = [j for j, k in enumerate(keys) if metrics.get(k) is not None and k in stats["keys"]]
    aligned = Bootstrap.aligned(stats, keys)
    values[:, present] = aligned[: len(values), present]
    codes = np.ascontiguousarray(rank_codes(values, definition.metrics).T)
    return Replicates(True, stamp, stats["intervals"], codes)
