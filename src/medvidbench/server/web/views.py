"""View models: what a page shows, computed from service results (no HTML here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medvidbench.core.benchmark import Metric
from medvidbench.core.config import judge_wanted
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.boards import KINDS, BoardRow, board_rows
from medvidbench.server.services.submissions import current_benchmark

PER_PAGE = 100  # keeps every page's HTML far under 300 KB on boards of thousands


@dataclass(slots=True)
class Column:
    """A board column; best and second-best values per section (one section "" unless a demo
    board ranks its parts apart)."""

    key: str
    title: str
    best: dict[str, float | None]
    second: dict[str, float | None]
    judged: bool
    percent: bool = False
    task: str = ""


def _best_two(
    rows: list[BoardRow], metric: Metric
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    best: dict[str, float | None] = {}
    second: dict[str, float | None] = {}
    for section in {r.section for r in rows}:
        values = sorted(
            {
                round(v, 3)
                for r in rows
                if r.section == section and (v := r.metrics.get(metric.key)) is not None
            },
            reverse=metric.higher_is_better,
        )
        best[section] = values[0] if values else None
        second[section] = values[1] if len(values) > 1 else None
    return best, second


def board_context(
    runtime: Runtime, kind: str, params: dict[str, str], slug: str | None = None
) -> dict[str, Any]:
    """Rows (ranked, then filtered and sorted as asked), columns with highlights, filters."""
    if kind not in KINDS:
        from medvidbench.core.errors import NotFoundError

        raise NotFoundError(f"no board {kind!r}")
    definition = runtime.definition(slug)
    rows = board_rows(runtime, kind, slug=definition.slug)
    metrics = definition.metrics
    columns = [
        Column(m.key, m.column, *_best_two(rows, m), m.judged, m.percent, m.task)
        for m in metrics
        if m.board
    ]
    q = params.get("q", "").strip().casefold()
    team = params.get("team", "")
    shown = [
        r
        for r in rows
        if (not q or q in r.model_name.casefold() or q in r.team.casefold())
        and (not team or r.team == team)
        and (params.get("verified") != "1" or "verified" in r.badges)
        and (params.get("complete") != "1" or r.metrics_present == len(metrics))
    ]
    sort = params.get("sort", "")
    if sort in definition.metric_keys:
        descending = params.get("order", "desc") != "asc"
        present = [r for r in shown if r.metrics.get(sort) is not None]
        absent = [r for r in shown if r.metrics.get(sort) is None]
        present.sort(key=lambda r: float(r.metrics[sort] or 0.0), reverse=descending)
        shown = present + absent  # missing values last either way
    pages = max(1, -(-len(shown) // PER_PAGE))
    try:
        current = min(max(1, int(params.get("page", "1"))), pages)
    except ValueError:
        current = 1
    visible = shown[(current - 1) * PER_PAGE : current * PER_PAGE]
    groups: list[tuple[str, int]] = []
    for m in metrics:
        if not m.board:
            continue
        label = definition.group_of(m)
        if groups and groups[-1][0] == label:
            groups[-1] = (label, groups[-1][1] + 1)
        else:
            groups.append((label, 1))
    bench = current_benchmark(runtime, definition.slug)
    return {
        "kind": kind,
        "rows": visible,
        "show_intervals": params.get("intervals") != "off",
        "matched": len(shown),
        "page": current,
        "pages": pages,
        "total": len(rows),
        "columns": columns,
        "metric_total": len(metrics),
        "ranked_total": sum(m.ranked for m in metrics),
        "groups": groups,
        "teams": sorted({r.team for r in rows if r.team}),
        "params": params,
        "sort": sort,
        "order": params.get("order", "desc"),
        "bench": bench,
        "demo": bench.is_demo,
        "judge_on": judge_wanted(runtime.settings),
    }
