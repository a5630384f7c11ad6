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
    name: str = "",
    demo: bool = False,
    actor: User | None = None,
    slug: str | None = None,
) -> Benchmark:
    """Validate a ground-truth file of benchmark ``slug`` (None: the default one), keep a copy,
    and make it that benchmark's current test set (other benchmarks' are left alone)."""
    definition = runtime.definition(slug)
    data = read_bytes(path, runtime.settings.max_submission_bytes)
    gt = definition.load_ground_truth(data)
    with transaction(runtime.sessions) as session:
        bench = session.scalar(select(Benchmark).where(Benchmark.gt_sha256 == gt.sha256))
        if bench is None:
            runtime.write_atomically(runtime.benchmark_path(gt.sha256), data)
            bench = Benchmark(
                slug=definition.slug,
                name=(name or definition.title)[:80],
                gt_sha256=gt.sha256,
                sample_count=len(gt),
                task_counts=_task_counts(definition, gt),
                is_demo=demo,
            )
            session.add(bench)
            session.flush()
            for kind in KINDS:
                session.add(Board(benchmark_id=bench.id, kind=kind))
        elif bench.slug != definition.slug:
            raise ConflictError(
                f"this file is already loaded as a test set of {bench.slug!r}, "
                f"not of {definition.slug!r}"
            )
        for other in session.scalars(
            select(Benchmark).where(Benchmark.id != bench.id, Benchmark.slug == bench.slug)
        ):
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


def _task_counts(definition: Any, gt: Any) -> dict[str, int]:
    """Items per task, in the definition's task order."""
    counts: dict[str, int] = {}
    for item in gt.samples:
        counts[item.task] = counts.get(item.task, 0) + 1
    return {t.name: counts[t.name] for t in definition.tasks if t.name in counts}


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
        board = _board(session, bench_id, kind)
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
    benchmark: str | None = None,
) -> Entry:
    """Add numbers computed elsewhere (a paper, the old leaderboard), flagged as reported, to
    a board of ``benchmark`` (a slug; None: the default benchmark)."""
    if actor is not None:
        require_role(actor, "admin")
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


def export_board(runtime: Runtime, kind: str, fmt: str = "csv", slug: str | None = None) -> str:
    """A benchmark's board with every metric and its provenance, as CSV or JSON."""
    definition = runtime.definition(slug)
    rows = board_rows(runtime, kind, slug=definition.slug)
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
            *[m.column for m in definition.metrics],
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
                        for m in definition.metrics
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


def seed_published(runtime: Runtime, slug: str | None = None) -> int:
    """Put the benchmark's published results on an empty official board, as reported entries."""
    definition = runtime.definition(slug)
    bench = current_benchmark(runtime, definition.slug)
    with runtime.sessions() as session:
        board = _board(session, bench.id, "official")
        if session.scalar(select(Entry.id).where(Entry.board_id == board.id).limit(1)):
            return 0
    added = 0
    for item in definition.reported_results():
        add_reported(
            runtime,
            None,
            item["model"],
            item["team"],
            item["metrics"],
            source=item["source"],
            baseline=bool(item.get("baseline")),
            date=item.get("date"),
            benchmark=definition.slug,
        )
        added += 1
    return added


def bootstrap(runtime: Runtime, ground_truth: Path | None = None) -> list[Benchmark]:
    """First run: give every hosted benchmark a current test set (``ground_truth`` for the
    default benchmark; else its synthetic demo set, written with example prediction files to
    ``DATA/demo/<slug>/``), and seed each empty official board with the published results.

    Returns the current test set of every hosted benchmark that has one. A benchmark without
    a test set or a generator is skipped (its pages say no test set is loaded); the default
    benchmark must have one.
    """
    loaded = []
    for slug in runtime.hosted:
        if ground_truth is not None and slug == runtime.default_slug:
            load_benchmark(runtime, ground_truth, slug=slug)
        with runtime.sessions() as session:
            found = session.scalar(
                select(Benchmark).where(Benchmark.is_current, Benchmark.slug == slug)
            )
        if found is None:
            definition = runtime.definition(slug)
            if definition.synthesise is None:
                if slug == runtime.default_slug:
                    raise UsageError(
                        f"benchmark {slug!r} has no synthetic demo set; "
                        "give its test set with --ground-truth"
                    )
                continue
            files = definition.synthesise(runtime.data_dir / "demo" / slug, None, 0)
            found = load_benchmark(
                runtime,
                files["ground_truth"],
                name=f"{definition.title} (demo)",
                demo=True,
                slug=slug,
            )
        seed_published(runtime, slug)
        loaded.append(found)
    return loaded
