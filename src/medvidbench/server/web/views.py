"""View models: what a page shows, computed from service results (no HTML here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from medvidbench.core.benchmark import Benchmark, Metric
from medvidbench.core.config import judge_wanted
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.board_reads import KINDS
from medvidbench.server.services.boards import BoardRow, board_rows
from medvidbench.server.services.test_sets import current_benchmark

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


# The query parameters a board's links carry over (the page number only where it still holds).
KEPT = ("q", "team", "verified", "complete", "sort", "order", "intervals")


def chosen_metrics(definition: Benchmark, asked: list[str]) -> list[Metric]:
    """The metric columns a board shows: those asked for by key (``?col=a&col=b``, in the
    benchmark's order; unknown keys ignored), else the benchmark's default columns."""
    wanted = set(asked) & set(definition.metric_keys)
    if wanted:
        return [m for m in definition.metrics if m.key in wanted]
    return [m for m in definition.metrics if m.board]


def board_query(params: dict[str, str], cols: list[str], **changes: str | None) -> str:
    """A board link's query string: the current filters, sort and columns, with ``changes``
    (a None value drops that parameter; ``col=None``: the default columns)."""
    if "col" in changes:
        cols = []
        del changes["col"]
    kept = {k: params[k] for k in KEPT if params.get(k)}
    kept.update({k: v for k, v in changes.items() if v is not None})
    for k, v in changes.items():
        if v is None:
            kept.pop(k, None)
    pairs = [*kept.items(), *(("col", c) for c in cols)]
    return "?" + urlencode(pairs) if pairs else "?"


def board_context(
    runtime: Runtime,
    kind: str,
    params: dict[str, str],
    slug: str | None = None,
    cols: list[str] | None = None,
) -> dict[str, Any]:
    """Rows (ranked, then filtered and sorted as asked), the chosen columns with highlights,
    filters, and the links that keep them."""
    if kind not in KINDS:
        from medvidbench.core.errors import NotFoundError

        raise NotFoundError(f"no board {kind!r}")
    definition = runtime.definition(slug)
    rows = board_rows(runtime, kind, slug=definition.slug)
    metrics = definition.metrics
    shown_metrics = chosen_metrics(definition, cols or [])
    # the URL names the columns only when they differ from the default
    asked = (
        [m.key for m in shown_metrics] if shown_metrics != chosen_metrics(definition, []) else []
    )
    columns = [
        Column(m.key, m.column, *_best_two(rows, m), m.judged, m.percent, m.task)
        for m in shown_metrics
    ]
    shown = _filtered(rows, params, len(metrics))
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
        "chooser": _chooser(definition, {m.key for m in shown_metrics}),
        "asked_columns": asked,
        "query": lambda **changes: board_query(params, asked, **changes),
        "filtered": any(params.get(k) for k in ("q", "team", "verified", "complete")),
        "metric_total": len(metrics),
        "ranked_total": sum(m.ranked for m in metrics),
        "groups": _groups(definition, shown_metrics),
        "teams": sorted({r.team for r in rows if r.team}),
        "params": params,
        "sort": sort,
        "order": params.get("order", "desc"),
        "bench": bench,
        "demo": bench.is_demo,
        "judge_on": judge_wanted(runtime.settings),
    }


def _filtered(rows: list[BoardRow], params: dict[str, str], metric_total: int) -> list[BoardRow]:
    q = params.get("q", "").strip().casefold()
    team = params.get("team", "")
    return [
        r
        for r in rows
        if (not q or q in r.model_name.casefold() or q in r.team.casefold())
        and (not team or r.team == team)
        and (params.get("verified") != "1" or "verified" in r.badges)
        and (params.get("complete") != "1" or r.metrics_present == metric_total)
    ]


def _groups(definition: Benchmark, metrics: list[Metric]) -> list[tuple[str, int]]:
    """The header's column groups over the shown metrics: (label, span), in order."""
    groups: list[tuple[str, int]] = []
    for m in metrics:
        label = definition.group_of(m)
        if groups and groups[-1][0] == label:
            groups[-1] = (label, groups[-1][1] + 1)
        else:
            groups.append((label, 1))
    return groups


def _chooser(definition: Benchmark, shown: set[str]) -> list[tuple[str, list[tuple[Metric, bool]]]]:
    """Every metric of the benchmark by group, ticked where the board shows it."""
    groups: dict[str, list[tuple[Metric, bool]]] = {}
    for m in definition.metrics:
        groups.setdefault(definition.group_of(m), []).append((m, m.key in shown))
    return list(groups.items())


def origins(rows: list[BoardRow], demo: bool) -> tuple[dict[int, str], bool]:
    """What each compared entry's numbers are (reported elsewhere, or scored by this server,
    on the demo test set when it is one), and whether a comparison mixes the two on a demo
    server, where the reported numbers come from another test set."""
    where = {
        r.entry_id: ("reported" if r.submission_id is None else "scored here")
        + (", real test set" if demo and r.submission_id is None else "")
        + (", demo test set" if demo and r.submission_id is not None else "")
        for r in rows
    }
    kinds = {r.submission_id is None for r in rows}
    return where, demo and len(kinds) == 2
