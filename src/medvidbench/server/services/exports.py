"""A board as a spreadsheet or JSON, with every metric and its provenance; cells that a spreadsheet
would run as formulas are defused.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import asdict
from typing import Any

from medvidbench.core.errors import UsageError
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.boards import board_rows

# A spreadsheet may split a cell again on whichever separator its locale uses (",", ";", tab,
# "|"), so a formula can start after any of them, not only at the start of the cell.
_FORMULA_START = re.compile(r"""(^|[,;\t|\r\n])(\s*["']?)(?=[=+\-@\t\r])""")


def spreadsheet_cell(value: Any) -> Any:
    """Spreadsheet-safe text: every place a formula could start gets a leading quote.

    Examples:
        >>> c = spreadsheet_cell
        >>> c("=1+1"), c("x;=cmd|' /C calc'!A0;"), c("GPT-4o"), c(0.5)
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
            "rank_interval_low",
            "rank_interval_high",
            "tie_group",
            *[f"{m.column} {side}" for m in definition.metrics for side in ("low", "high")],
            "place",
            "private_runs_before",
        ]
    )
    for r in rows:
        j = r.judge or {}
        writer.writerow(
            [
                spreadsheet_cell(v)
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
                    r.rank_interval[0] if r.rank_interval else "",
                    r.rank_interval[1] if r.rank_interval else "",
                    r.tie_group or "",
                    *_bounds(r.intervals, definition.metrics),
                    r.place,
                    "" if r.private_runs is None else r.private_runs,
                ]
            ]
        )
    return out.getvalue()


def _bounds(intervals: dict[str, Any] | None, metrics: Any) -> list[str]:
    """Each metric's 95 % interval as two cells (empty without one)."""
    out = []
    for m in metrics:
        iv = (intervals or {}).get(m.key)
        out += [f"{iv[0]:.3f}", f"{iv[1]:.3f}"] if iv else ["", ""]
    return out
