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

from medvidbench.core.display import public_provenance
from medvidbench.core.errors import NotFoundError
from medvidbench.core.ranking import Ranked, rank_rounded, rank_rows
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.board_reads import (
    KINDS,
    BoardRead,
    Replicates,
    day,
    prepare_replicates,
    read_board,
)
from medvidbench.server.services.evaluations import current_evaluations
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.store import board_cache
from medvidbench.server.store.models import Submission, TestSet


@dataclass(slots=True)
class BoardRow:
    """One ranked row, ready for a page, the API or a CSV file.

    ``rank`` is 1 + the number of rows significantly better (core/standings.py): rows that
    cannot be told apart share it, and its medal; ``place`` is the row's place in the published
    order (1..n), which the board is sorted by."""

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
    # places the row could hold (from its rank to the rows not significantly worse than it) and
    # its group; None with the reason in ``interval_note`` (reported numbers have no per-item
    # data).
    missing_tasks: list[str] = field(default_factory=list)  # tasks the file did not answer
    # On a demo test set: "demo-scored" (ranked among themselves) or "demo-reported" (the real
    # test set's published numbers, ranked apart); "" otherwise.
    section: str = ""
    intervals: dict[str, list[float] | None] | None = None
    rank_interval: tuple[int, int] | None = None
    tie_group: int | None = None
    interval_note: str = ""
    place: int = 0
    medal: int | None = None  # 1-3 (gold, silver, bronze); never for a row that scored nothing
    # runs the row's team, or its submitter, had scored on this benchmark that were not public
    # when it was published (services/private_runs.py); None for a reported row (not known)
    private_runs: int | None = None


def board_version(runtime: Runtime, slug: str) -> tuple[int, int]:
    """The current test set of ``slug`` and its boards' generation, in one read: what a copy
    of a board (a rendered page, an ETag) is valid for."""
    with runtime.sessions() as session:
        found = session.execute(
            select(TestSet.id, TestSet.generation)
            .where(TestSet.is_current, TestSet.slug == slug)
            .order_by(TestSet.id.desc())
            .limit(1)
        ).first()
    if found is None:
        current_benchmark(runtime, slug)  # raises the error that names the load command
        raise AssertionError("unreachable")
    return int(found[0]), int(found[1] or 0)


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
    read = read_board(runtime, kind, bench_id)
    # what ranking this board last time left, per part: a change of a few entries is ranked
    # from it (exactly the same result, a fraction of the work)
    held: dict[int, dict[str, Any]] = runtime.boards.get(("rank-sums", bench_id, kind), 0, dict)
    ranked, uncertainty, section = _rank(read, held)
    return _rows(read, ranked, uncertainty, section)


def _rank(
    read: BoardRead, held: dict[int, dict[str, Any]] | None = None
) -> tuple[list[Ranked], list[dict[str, Any]], list[str]]:
    """The official order, each row's uncertainty and, on a demo test set holding both,
    which section a row is in. ``held`` keeps, per part, what ranking it left for the next
    time (see :func:`_rank_sums`)."""
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
        ranked_part = rank_rounded(
            [(i, raw[i][0].model_name) for i in part],
            [read.rounded[i] for i in part],
            definition.metrics,
        )
        ranked += ranked_part
        where = {i: j for j, i in enumerate(part)}
        found = _standings(
            [
                (None if ev is None else read.prepared.get(ev.id), metrics, ev is None)
                for _, ev, metrics in (raw[i] for i in part)
            ],
            [where[int(r.key)] for r in ranked_part],  # type: ignore[call-overload]
            definition,
            None if held is None else held.setdefault(n, {}),
        )
        for j, i in enumerate(part):
            uncertainty[i] = found[j]
            if len(parts) > 1:
                section[i] = ("demo-scored", "demo-reported")[n]
    return ranked, uncertainty, section


def _rows(
    read: BoardRead, ranked: list[Ranked], uncertainty: list[dict[str, Any]], section: list[str]
) -> list[BoardRow]:
    definition = read.definition
    rows = []
    for r in ranked:
        extra = dict(uncertainty[int(r.key)])  # type: ignore[call-overload]
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
        metrics = read.metrics[int(r.key)]  # type: ignore[call-overload]
        rank = extra.pop("rank")
        # A medal for a place among the first three, if the row scored anything at all: a run
        # at the lowest value of every metric it has (boxes in the wrong coordinates, say) is
        # ranked but never decorated.
        scored = any(
            (m.normalised(metrics.get(m.key)) or 0.0) > 0 for m in definition.metrics if m.ranked
        )
        # A reported row has its source's date or none: the day it was seeded here means nothing.
        date = e.verified_date or (
            "" if e.reported else day(sub.created_at if sub else e.created_at)
        )
        rows.append(
            BoardRow(
                rank=rank,
                medal=rank if rank <= 3 and scored else None,
                private_runs=sub.private_runs if sub else None,
                place=r.rank,
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
                judge=public_provenance(ev.judge) if ev else None,
                source=e.source,
                missing_tasks=list(sub.missing_tasks or []) if sub else [],
                section=section[int(r.key)],  # type: ignore[call-overload]
                **extra,
            )
        )
    return rows


def _standings(
    raw: list[tuple[Replicates | None, dict[str, float | None], bool]],
    order: list[int],
    definition: Any,
    held: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Per row: its rank, metric intervals, the places it could hold and its group, from the
    board's joint replicates (core/standings.py).

    Rows whose evaluations share the board's bootstrap (the most common replicate count and
    seed) are resampled together; every other row (reported numbers, evaluations stored without
    a bootstrap or with other settings) keeps its values in every replicate and gets no
    interval, with the reason. Ranks use the replicates
    :func:`~medvidbench.core.standings.rank_replicates` names; a board with none is ranked on
    its values alone (ties sharing a rank).
    """
    from collections import Counter

    from medvidbench.core.standings import Standings

    stamps = Counter(p.stamp for p, _, _ in raw if p is not None and p.stamp is not None)
    out: list[dict[str, Any]] = [{} for _ in raw]
    board_stamp = stamps.most_common(1)[0][0] if stamps else None
    shared = [p.codes for p, _, _ in raw if p is not None and p.stamp == board_stamp]
    reps = min((c.shape[1] for c in shared if c is not None), default=1)
    per_entry = []  # ranked metrics x replicates, each
    keys: list[Any] = []  # what each entry's codes are: its decoded replicates, or fixed values
    for i, (prepared, metrics, reported) in enumerate(raw):
        if (
            board_stamp is None
            or prepared is None
            or prepared.stamp != board_stamp
            or prepared.codes is None
        ):
            fixed = _fixed_codes(metrics, definition)
            per_entry.append(np.broadcast_to(fixed, (len(fixed), reps)))
            keys.append(tuple(fixed[:, 0].tolist()))
            out[i]["interval_note"] = _why_not(prepared, reported)
            continue
        per_entry.append(prepared.codes[:, :reps])
        keys.append(id(prepared.codes))  # held (in ``held``) as long as the key is
        out[i]["intervals"] = prepared.intervals
    sums = _rank_sums(per_entry, keys, held)
    # the sums order each replicate as the positions do; the stamp's third part is the number
    # of clusters the replicates resample (few: a stricter test)
    clusters = board_stamp[2] if board_stamp is not None else None
    clusters = clusters if isinstance(clusters, int) else None  # older stamps: none recorded
    found = Standings.of(sums, order, clusters=clusters)
    ranks, bounds = found.ranks.tolist(), found.bounds.tolist()
    for n, i in enumerate(order):
        out[i]["rank"] = ranks[i]
        if board_stamp is None:
            continue
        if "intervals" in out[i]:
            out[i]["rank_interval"] = tuple(bounds[i])
        out[i]["tie_group"] = found.groups[n]
    return out


# Above this many entries joining or leaving at once, a board is ranked from scratch.
_MOST_CHANGES = 4


def _rank_sums(
    per_entry: list[np.ndarray], keys: list[Any], held: dict[str, Any] | None
) -> np.ndarray:
    """The board's :func:`~medvidbench.core.standings.rank_sums` (``per_entry``: each entry's
    codes, ranked metrics x replicates), updated from those ``held`` from the last time when at
    most :data:`_MOST_CHANGES` entries joined or left (a rescored entry leaves and joins),
    otherwise counted afresh; then ``held`` keeps this board's for the next time. An entry is
    known by its decoded replicates (the same object while its evaluation is unchanged:
    read_board keeps them) or by its fixed codes."""
    from medvidbench.core.standings import compact_codes, rank_sums

    found = _changed_sums(per_entry, keys, held) if held else None
    if found is None:
        full = np.stack(per_entry)  # entries x metrics x replicates
        found = rank_sums(full.transpose(1, 0, 2)), compact_codes(full)
    sums, codes = found
    if held is not None:
        held.update(
            shape=per_entry[0].shape, keys=keys, per_entry=per_entry, codes=codes, sums=sums
        )
    return sums


def _changed_sums(
    per_entry: list[np.ndarray], keys: list[Any], held: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray | None] | None:
    """:func:`_rank_sums` from what ``held`` keeps, and the board's compact codes; None when
    ranking afresh is due (too many changes, other replicates, codes that do not fit)."""
    from medvidbench.core.standings import compact_codes, rank_sums_changed

    if not held["keys"] or held["codes"] is None or held["shape"] != per_entry[0].shape:
        return None
    where: dict[Any, list[int]] = {}
    for i, key in enumerate(held["keys"]):
        where.setdefault(key, []).append(i)
    source = [where[k].pop() if where.get(k) else -1 for k in keys]
    added = [n for n, s in enumerate(source) if s < 0]
    left = [i for unmatched in where.values() for i in unmatched]
    if len(left) + len(added) > _MOST_CHANGES:
        return None
    gone = [compact_codes(held["per_entry"][i]) for i in left]
    joining = [compact_codes(per_entry[a]) for a in added]
    kept = np.maximum(source, 0)
    codes = held["codes"][kept]  # entries x metrics x replicates, one gather
    for a, compact in zip(added, joining, strict=True):
        if compact is None:
            return None
        codes[a] = compact
    fitting = [g for g in gone if g is not None]
    if len(fitting) < len(gone):
        return None
    by_metric = codes.transpose(1, 0, 2)
    return rank_sums_changed(held["sums"][kept], by_metric, fitting, added), codes


def _fixed_codes(metrics: dict[str, float | None], definition: Any) -> np.ndarray:
    """A row's rank codes in every replicate alike (ranked metrics x 1)."""
    from medvidbench.core.standings import rank_codes

    fixed = [np.nan if (v := metrics.get(k)) is None else float(v) for k in definition.metric_keys]
    return rank_codes(np.array(fixed), definition.metrics)[:, None]


def _why_not(prepared: Replicates | None, reported: bool) -> str:
    if reported:
        return "no interval: reported numbers come without per-item results"
    if prepared is None or not prepared.stored:
        return "no interval: scored without a bootstrap (before intervals existed, or with none)"
    if prepared.withheld:
        return (
            "no interval: drawn with a seed anyone knows, before this server kept it secret "
            "(an administrator's 'medvidbench rescore' draws it again)"
        )
    return "no interval: bootstrapped with other settings than the rest of the board"


def would_rank(runtime: Runtime, slug: str, submission_id: int) -> tuple[int, int] | None:
    """Where a private submission would rank on its benchmark's community board, by the board's
    own rule (its evaluation's replicates paired with the board's; ties shared), among the
    rows it would be ranked with; None without an evaluation the board would show, or when it
    was scored on an earlier test set (other items: not comparable). Computed once per board
    generation and evaluation."""
    bench_id = current_benchmark(runtime, slug).id
    definition = runtime.definition(slug)
    with runtime.sessions() as session:
        if (
            session.scalar(select(Submission.benchmark_id).where(Submission.id == submission_id))
            != bench_id
        ):
            return None
        current = board_cache.generation(session, bench_id)
        ev = current_evaluations(session, [submission_id], definition).get(submission_id)
    if ev is None:
        return None
    return runtime.boards.get(
        ("would-rank", bench_id, ev.id, ev.created_at),
        current,
        lambda: _would_rank(runtime, bench_id, ev),
    )


def _would_rank(runtime: Runtime, bench_id: int, ev: Any) -> tuple[int, int]:
    read = read_board(runtime, "community", bench_id)
    definition = read.definition
    # on a demo test set, a scored run is ranked with the scored rows, apart from reported ones
    keep = [i for i, e in enumerate(read.entries) if not (read.demo and e.reported)]
    raw = []
    for i in keep:
        e = read.entries[i]
        held = read.evals.get(e.submission_id) if e.submission_id else None
        prepared = None if held is None else read.prepared.get(held.id)
        raw.append((prepared, read.metrics[i], held is None))
    metrics = {k: (ev.metrics or {}).get(k) for k in definition.metric_keys}
    raw.append((prepare_replicates(ev.statistics, ev.metrics, definition), metrics, False))
    names = [read.entries[i].model_name for i in keep] + ["this submission"]
    ranked = rank_rows([(n, names[n], raw[n][1]) for n in range(len(raw))], definition.metrics)
    found = _standings(raw, [int(r.key) for r in ranked], definition)  # type: ignore[call-overload]
    return found[-1]["rank"], len(raw)
