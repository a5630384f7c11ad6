"""Benchmarks and boards: loading a test set, ranked board rows, official entries, export.

Every board is ranked within itself (metrics.md §6). A row's metrics come from its submission's
current evaluation (judged if available), or, for numbers we did not compute, from what was
reported (flagged ``reported`` with its source). Pending caption metrics are missing, not zero.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from medvidbench.core.errors import ConflictError, NotFoundError, UsageError
from medvidbench.core.formats import read_bytes
from medvidbench.core.ranking import rank_rows
from medvidbench.server.lifecycle import ON_BOARD
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import board_cache
from medvidbench.server.services.accounts import audit, require_role
from medvidbench.server.services.processing import current_evaluations
from medvidbench.server.services.submissions import clean_url, current_benchmark, model_key
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import Benchmark, Board, Entry, Submission, User

KINDS = ("official", "community")


def load_benchmark(
    runtime: Runtime,
    path: str | Path,
    name: str = "MedVidBench",
    demo: bool = False,
    actor: User | None = None,
) -> Benchmark:
    """Validate a ground-truth file, keep a copy, and make it the current benchmark."""
    data = read_bytes(path, runtime.settings.max_submission_bytes)
    gt = runtime.benchmark.load_ground_truth(data)
    with transaction(runtime.sessions) as session:
        bench = session.scalar(select(Benchmark).where(Benchmark.gt_sha256 == gt.sha256))
        if bench is None:
            runtime.write_atomically(runtime.benchmark_path(gt.sha256), data)
            bench = Benchmark(
                name=name[:80],
                gt_sha256=gt.sha256,
                sample_count=len(gt),
                task_counts=gt.task_counts(),
                is_demo=demo,
            )
            session.add(bench)
            session.flush()
            for kind in KINDS:
                session.add(Board(benchmark_id=bench.id, kind=kind))
        for other in session.scalars(select(Benchmark).where(Benchmark.id != bench.id)):
            other.is_current = False
        bench.is_current = True
        session.flush()
        board_cache.bump(session, bench.id)
        audit(
            session,
            actor,
            "benchmark.load",
            f"benchmark:{bench.id}",
            sha256=gt.sha256,
            samples=len(gt),
            demo=demo,
        )
    return bench


def _board(session: Session, benchmark_id: int, kind: str) -> Board:
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


def board_rows(runtime: Runtime, kind: str, benchmark_id: int | None = None) -> list[BoardRow]:
    """The ranked rows of a board (computed once per change of its benchmark, then reused;
    callers must not modify them)."""
    bench_id = benchmark_id or current_benchmark(runtime).id
    if kind not in KINDS:
        raise NotFoundError(f"no board {kind!r}; expected official or community")
    with runtime.sessions() as session:
        current = board_cache.generation(session, bench_id)
    return runtime.boards.get(
        ("rows", bench_id, kind), current, lambda: _ranked_rows(runtime, kind, bench_id)
    )


def _ranked_rows(runtime: Runtime, kind: str, bench_id: int) -> list[BoardRow]:
    with runtime.sessions() as session:
        board = _board(session, bench_id, kind)
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
        evals = current_evaluations(session, ids, runtime.benchmark)
    keys = runtime.benchmark.metric_keys
    raw = []
    for e in entries:
        ev = evals.get(e.submission_id) if e.submission_id else None
        metrics = dict.fromkeys(keys)
        metrics.update((ev.metrics if ev else e.reported_metrics) or {})
        raw.append((e, ev, {k: metrics.get(k) for k in keys}))
    ranked = rank_rows(
        [(i, e.model_name, m) for i, (e, _, m) in enumerate(raw)], runtime.benchmark.metrics
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
            )
            if on
        ]
        date = e.verified_date or (sub.created_at if sub else e.created_at).date().isoformat()
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


def promote(
    runtime: Runtime,
    actor: User,
    submission_id: int,
    verified: bool = True,
    verified_date: str | None = None,
) -> Entry:
    """Put a scored community submission on the official board."""
    require_role(actor, "admin")
    with transaction(runtime.sessions) as session:
        sub = session.get(Submission, submission_id)
        if sub is None or sub.status not in ON_BOARD:
            raise NotFoundError(f"no scored submission {submission_id}")
        board = _board(session, sub.benchmark_id, "official")
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
) -> Entry:
    """Add numbers computed elsewhere (a paper, the old leaderboard), flagged as reported."""
    if actor is not None:
        require_role(actor, "admin")
    unknown = set(metrics) - set(runtime.benchmark.metric_keys)
    if unknown:
        raise UsageError(f"unknown metric(s) {', '.join(sorted(unknown))}")
    for key, value in metrics.items():
        if value is not None:
            low, high = runtime.benchmark.metrics_by_key[key].bounds
            if not low <= float(value) <= high:
                raise UsageError(f"{key} = {value} is outside {low:g}-{high:g}")
    bench = current_benchmark(runtime)
    with transaction(runtime.sessions) as session:
        board = _board(session, bench.id, kind)
        key = model_key(model_name)
        if session.scalar(
            select(Entry.id).where(Entry.board_id == board.id, Entry.model_key == key)
        ):
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
    require_role(actor, "admin")
    with transaction(runtime.sessions) as session:
        entry = session.get(Entry, entry_id)
        if entry is None:
            raise NotFoundError(f"no entry {entry_id}")
        audit(session, actor, "entry.remove", f"entry:{entry_id}", model=entry.model_name)
        board = session.get(Board, entry.board_id)
        session.delete(entry)
        if board is not None:
            board_cache.bump(session, board.benchmark_id)


# A spreadsheet may split a cell again on whichever separator its locale uses (",", ";", tab,
# "|"), so a formula can start after any of them, not only at the start of the cell.
_FORMULA_START = re.compile(r"""(^|[,;\t|\r\n])(\s*["']?)(?=[=+\-@\t\r])""")


def _cell(value: Any) -> Any:
    """Spreadsheet-safe text: every place a formula could start gets a leading quote.

    Examples:
        >>> _cell("=1+1"), _cell("x;=cmd|' /C calc'!A0;"), _cell("GPT-4o"), _cell(0.5)
        ("'=1+1", "x;'=cmd|' /C calc'!A0;", 'GPT-4o', 0.5)
    """
    if isinstance(value, str):
        return _FORMULA_START.sub(lambda m: m.group(1) + m.group(2) + "'", value)
    return value


def export_board(runtime: Runtime, kind: str, fmt: str = "csv") -> str:
    """The board with every metric and its provenance, as CSV or JSON."""
    rows = board_rows(runtime, kind)
    if fmt == "json":
        return json.dumps([asdict(r) for r in rows], indent=2, default=str)
    if fmt != "csv":
        raise UsageError(f"unknown format {fmt!r}; expected csv or json")
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            "rank",
            "model",
            "team",
            "url",
            *[m.column for m in runtime.benchmark.metrics],
            "average_rank",
            "metrics_present",
            "normalised_average",
            "badges",
            "status",
            "date",
            "profile",
            "scorer_version",
            "judge_model",
            "judge_config",
            "submission_id",
            "source",
        ]
    )
    for r in rows:
        j = r.judge or {}
        writer.writerow(
            [
                _cell(v)
                for v in [
                    r.rank,
                    r.model_name,
                    r.team,
                    r.model_url or "",
                    *[
                        "" if r.metrics[m.key] is None else f"{r.metrics[m.key]:.3f}"
                        for m in runtime.benchmark.metrics
                    ],
                    f"{r.average_rank:.2f}",
                    r.metrics_present,
                    "" if r.normalised_average is None else f"{r.normalised_average:.3f}",
                    " ".join(r.badges),
                    r.status,
                    r.date,
                    r.profile or "",
                    r.scorer_version or "",
                    j.get("model_reported") or "",
                    j.get("config_id") or "",
                    r.submission_id or "",
                    r.source or "",
                ]
            ]
        )
    return out.getvalue()


def seed_published(runtime: Runtime) -> int:
    """Put the benchmark's published results on an empty official board, as reported entries."""
    bench = current_benchmark(runtime)
    with runtime.sessions() as session:
        board = _board(session, bench.id, "official")
        if session.scalar(select(Entry.id).where(Entry.board_id == board.id).limit(1)):
            return 0
    added = 0
    for item in runtime.benchmark.reported_results():
        add_reported(
            runtime,
            None,
            item["model"],
            item["team"],
            item["metrics"],
            source=item["source"],
            baseline=bool(item.get("baseline")),
            date=item.get("date"),
        )
        added += 1
    return added


def bootstrap(runtime: Runtime, ground_truth: Path | None = None) -> Benchmark:
    """First run: load the given test set (or generate the synthetic demo one with example
    prediction files), and seed an empty official board with the published results."""
    if ground_truth is not None:
        bench = load_benchmark(runtime, ground_truth)
    else:
        with runtime.sessions() as session:
            found = session.scalar(select(Benchmark).where(Benchmark.is_current))
        if found is None:
            definition = runtime.benchmark
            if definition.synthesise is None:
                raise UsageError(
                    f"benchmark {definition.slug!r} has no synthetic demo set; "
                    "give the test set with --ground-truth"
                )
            files = definition.synthesise(runtime.data_dir / "demo", None, 0)
            found = load_benchmark(
                runtime, files["ground_truth"], name=f"{definition.title} (demo)", demo=True
            )
        bench = found
    seed_published(runtime)
    return bench
