"""Ranked boards. Every board is ranked within itself (metrics.md §6). A row's metrics come from
its submission's current evaluation (judged if available), or, for numbers we did not compute,
from what was reported (flagged ``reported`` with its source). Pending judged metrics are
missing, not zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from medvidbench.core.errors import NotFoundError
from medvidbench.core.ranking import Ranked, rank_rows
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.evaluations import current_evaluations
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.store import board_cache
from medvidbench.server.store.models import Board, Entry, Evaluation, Submission, TestSet

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
    # How sure the numbers are (docs/statistics.md): the 95 % interval of each metric, the
    # rank's interval over the board's joint bootstrap replicates and its tie group; None with
    # the reason in ``interval_note`` (reported numbers have no per-item data).
    missing_tasks: list[str] = field(default_factory=list)  # tasks the file did not answer
    # On a demo test set: "demo-scored" (ranked among themselves) or "demo-reported" (the real
    # test set's published numbers, ranked apart); "" otherwise.
    section: str = ""
    intervals: dict[str, list[float] | None] | None = None
    rank_interval: tuple[int, int] | None = None
    tie_group: int | None = None
    interval_note: str = ""


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
    """A board's rows in three stages: read them, rank them, lay them out."""
    read = _query(runtime, kind, bench_id)
    ranked, uncertainty, section = _rank(read)
    return _rows(read, ranked, uncertainty, section)


@dataclass(slots=True)
class _Read:
    """What a board is ranked from: plain rows of just the columns it shows."""

    definition: Any
    demo: bool
    entries: list[Any]  # Entry columns, hidden submissions left out
    subs: dict[int, Any]  # Submission columns by id
    evals: dict[int, Any]  # the evaluation shown, by submission id
    metrics: list[dict[str, float | None]]  # each entry's, every metric key present
    prepared: dict[int, _Replicates]  # each evaluation's replicates for ranks, by its id


@dataclass(frozen=True, slots=True)
class _Replicates:
    """What ranking needs of one stored evaluation's bootstrap, decoded once: it never changes
    (an evaluation is written once), so a board re-ranked after a change decodes only the
    evaluations it has not seen."""

    created_at: Any  # with the id, tells a reused id apart
    stored: bool  # a bootstrap was stored (with or without its replicates)
    stamp: tuple[Any, Any, Any] | None
    intervals: dict[str, Any] | None
    # ranked metrics x RANK_REPLICATES: the replicates' rank codes (the point value's where
    # the metric has no replicates)
    codes: np.ndarray | None


def _query(runtime: Runtime, kind: str, bench_id: int) -> _Read:
    with runtime.sessions() as session:
        board = find_board(session, bench_id, kind)
        slug, demo = session.execute(
            select(TestSet.slug, TestSet.is_demo).where(TestSet.id == bench_id)
        ).one()
        definition = runtime.definition(slug)
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
                    Submission.hidden,
                    Submission.visibility,
                ).where(Submission.id.in_(ids[start : start + 500]))
            )
        }
        # a submission an administrator hid, or its submitter made private or withdrew, is off
        # every board (its page and scores are kept)
        hidden = {i for i, s in subs.items() if s.hidden or s.visibility != "public"}
        entries = [e for e in entries if e.submission_id not in hidden]
        evals = current_evaluations(session, ids, definition, with_statistics=False)
        # the replicates of the evaluations this board held last time are reused; only new
        # ones are read and decoded (a stored bootstrap is some 50 KB of base64)
        held: dict[int, _Replicates] = runtime.boards.get(("replicates", bench_id, kind), 0, dict)
        prepared = {
            ev.id: held[ev.id]
            for ev in evals.values()
            if ev.id in held and held[ev.id].created_at == ev.created_at
        }
        missing = [ev for ev in evals.values() if ev.id not in prepared]
        for start in range(0, len(missing), 100):
            part = {ev.id: ev for ev in missing[start : start + 100]}
            for ev_id, stats in session.execute(
                select(Evaluation.id, Evaluation.statistics).where(Evaluation.id.in_(part))
            ):
                ev = part[ev_id]
                prepared[ev_id] = _prepare(stats, ev.metrics, ev.created_at, definition)
        held.clear()
        held.update(prepared)
    metrics = []
    for e in entries:
        ev = evals.get(e.submission_id) if e.submission_id else None
        found = (ev.metrics if ev else e.reported_metrics) or {}
        metrics.append({k: found.get(k) for k in definition.metric_keys})
    return _Read(definition, demo, entries, subs, evals, metrics, prepared)


def _prepare(
    stats: dict[str, Any] | None, metrics: dict[str, Any], created_at: Any, definition: Any
) -> _Replicates:
    from medvidbench.core.statistics import RANK_REPLICATES, Bootstrap, rank_codes

    stamp = Bootstrap.stamp(stats)
    if stats is None or stamp is None:
        return _Replicates(created_at, stats is not None, stamp, None, None)
    keys = list(definition.metric_keys)
    metrics = metrics or {}
    values = np.empty((min(RANK_REPLICATES, int(stats["replicates"])), len(keys)))
    values[:] = [np.nan if metrics.get(k) is None else float(metrics[k]) for k in keys]
    present = [j for j, k in enumerate(keys) if metrics.get(k) is not None and k in stats["keys"]]
    aligned = Bootstrap.aligned(stats, keys)
    values[:, present] = aligned[: len(values), present]
    codes = np.ascontiguousarray(rank_codes(values, definition.metrics).T)
    return _Replicates(created_at, True, stamp, stats["intervals"], codes)


def _rank(read: _Read) -> tuple[list[Ranked], list[dict[str, Any]], list[str]]:
    """The official order, each row's uncertainty and, on a demo test set holding both,
    which section a row is in."""
    definition = read.definition
    raw = [
        (e, read.evals.get(e.submission_id) if e.submission_id else None, metrics)
        for e, metrics in zip(read.entries, read.metrics, strict=True)
    ]
    # On a demo test set, rows scored here (synthetic items) and reported ones (numbers on the
    # real test set) cannot be compared: a board holding both ranks, and resamples, each part on
    # its own.
    parts = (
        [
            [i for i, (e, _, _) in enumerate(raw) if not e.reported],
            [i for i, (e, _, _) in enumerate(raw) if e.reported],
        ]
        if read.demo and any(e.reported for e, _, _ in raw)
        else [list(range(len(raw)))]
    )
    ranked: list[Ranked] = []
    uncertainty: list[dict[str, Any]] = [{} for _ in raw]
    section = [""] * len(raw)
    for n, part in enumerate(parts):
        if not part:
            continue
        ranked_part = rank_rows(
            [(i, raw[i][0].model_name, raw[i][2]) for i in part], definition.metrics
        )
        ranked += ranked_part
        where = {i: j for j, i in enumerate(part)}
        found = _rank_uncertainty(
            [
                (None if ev is None else read.prepared.get(ev.id), metrics, ev is None)
                for _, ev, metrics in (raw[i] for i in part)
            ],
            [where[int(r.key)] for r in ranked_part],  # type: ignore[call-overload]
            definition,
        )
        for j, i in enumerate(part):
            uncertainty[i] = found[j]
            if len(parts) > 1:
                section[i] = ("demo-scored", "demo-reported")[n]
    return ranked, uncertainty, section


def _rows(
    read: _Read, ranked: list[Ranked], uncertainty: list[dict[str, Any]], section: list[str]
) -> list[BoardRow]:
    definition = read.definition
    rows = []
    for r in ranked:
        e = read.entries[int(r.key)]  # type: ignore[call-overload]
        ev = read.evals.get(e.submission_id) if e.submission_id else None
        sub = read.subs.get(e.submission_id) if e.submission_id else None
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
                metrics=read.metrics[int(r.key)],  # type: ignore[call-overload]
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
                missing_tasks=list(sub.missing_tasks or []) if sub else [],
                section=section[int(r.key)],  # type: ignore[call-overload]
                **uncertainty[int(r.key)],  # type: ignore[call-overload]
            )
        )
    return rows


def _rank_uncertainty(
    raw: list[tuple[_Replicates | None, dict[str, float | None], bool]],
    order: list[int],
    definition: Any,
) -> list[dict[str, Any]]:
    """Per row: metric intervals, rank interval and tie group from the joint replicates.

    Rows whose evaluations share the board's bootstrap (the most common replicate count and
    seed) are resampled together; every other row (reported numbers, evaluations stored without
    a bootstrap or with other settings) keeps its values in every replicate and gets no
    interval, with the reason. Ranks use the first :data:`RANK_REPLICATES` replicates.
    """
    from collections import Counter

    from medvidbench.core.statistics import rank_codes, rank_intervals_of_codes, tie_groups

    keys = list(definition.metric_keys)
    stamps = Counter(p.stamp for p, _, _ in raw if p is not None and p.stamp is not None)
    out: list[dict[str, Any]] = [{} for _ in raw]
    if not stamps:
        for i, (prepared, _, reported) in enumerate(raw):
            out[i]["interval_note"] = _why_not(prepared, reported)
        return out
    board_stamp, _ = stamps.most_common(1)[0]
    shared = [p.codes for p, _, _ in raw if p is not None and p.stamp == board_stamp]
    reps = min(c.shape[1] for c in shared if c is not None)
    per_entry = []  # ranked metrics x replicates, each
    for i, (prepared, metrics, reported) in enumerate(raw):
        if prepared is None or prepared.stamp != board_stamp or prepared.codes is None:
            fixed = [np.nan if metrics.get(k) is None else float(metrics[k]) for k in keys]  # type: ignore[arg-type]
            point = rank_codes(np.array(fixed), definition.metrics)[:, None]
            per_entry.append(np.broadcast_to(point, (len(point), reps)))
            out[i]["interval_note"] = _why_not(prepared, reported)
            continue
        per_entry.append(prepared.codes[:, :reps])
        out[i]["intervals"] = prepared.intervals
    codes = np.stack(per_entry, axis=1)  # ranked metrics x entries x replicates
    _, bounds = rank_intervals_of_codes(codes)
    groups = tie_groups(order, bounds)
    for n, i in enumerate(order):
        if "intervals" in out[i]:
            out[i]["rank_interval"] = (int(bounds[i][0]), int(bounds[i][1]))
        out[i]["tie_group"] = groups[n]
    return out


def _why_not(prepared: _Replicates | None, reported: bool) -> str:
    if reported:
        return "no interval: reported numbers come without per-item results"
    if prepared is None or not prepared.stored:
        return "no interval: scored without a bootstrap (before intervals existed, or with none)"
    return "no interval: bootstrapped with other settings than the rest of the board"


@dataclass(slots=True)
class Comparison:
    """Entry ``other`` against entry ``reference``, per metric: the difference and its paired
    bootstrap interval (None with ``note`` when the two cannot be paired)."""

    reference: str
    other: str
    differences: list[Any]
    note: str = ""


def compare(runtime: Runtime, rows: list[BoardRow], slug: str) -> list[Comparison]:
    """Each chosen row after the first against the first, paired on their shared replicates."""
    from medvidbench.core.statistics import Bootstrap, paired

    if len(rows) < 2:
        return []
    definition = runtime.definition(slug)
    ids = [r.submission_id for r in rows if r.submission_id]
    with runtime.sessions() as session:
        evals = current_evaluations(session, ids, definition)
    stats = [evals[r.submission_id].statistics if r.submission_id in evals else None for r in rows]
    keys = list(definition.metric_keys)
    first, base = rows[0], stats[0]
    out = []
    for row, other in zip(rows[1:], stats[1:], strict=True):
        shared = Bootstrap.stamp(base)
        if base is None or other is None or shared is None or shared != Bootstrap.stamp(other):
            reason = (
                "reported numbers come without per-item results"
                if first.submission_id is None or row.submission_id is None
                else "not bootstrapped together (scored without a bootstrap, or with other "
                "settings)"
            )
            out.append(
                Comparison(first.model_name, row.model_name, [], f"no paired interval: {reason}")
            )
            continue
        va, vb = Bootstrap.aligned(base, keys), Bootstrap.aligned(other, keys)
        out.append(
            Comparison(
                first.model_name, row.model_name, paired(vb, va, keys, row.metrics, first.metrics)
            )
        )
    return out


def would_rank(runtime: Runtime, slug: str, metrics: dict[str, Any]) -> tuple[int, int]:
    """Where a private submission's metrics would rank on its benchmark's community board."""
    from medvidbench.core.ranking import rank_rows

    definition = runtime.definition(slug)
    rows = [
        (r.entry_id, r.model_name, r.metrics) for r in board_rows(runtime, "community", slug=slug)
    ]
    ranked = rank_rows([*rows, ("this", "this submission", metrics)], definition.metrics)
    rank = next(r.rank for r in ranked if r.key == "this")
    return rank, len(ranked)
