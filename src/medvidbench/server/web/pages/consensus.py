"""The consensus board across the hosted benchmarks (``/consensus``), its JSON and CSV."""

from __future__ import annotations

import csv
import io
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from medvidbench.core.benchmark import FAMILIES
from medvidbench.core.consensus import families as named_families
from medvidbench.core.errors import UsageError
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.consensus import Consensus, consensus
from medvidbench.server.services.exports import spreadsheet_cell
from medvidbench.server.web.render import page

router = APIRouter(include_in_schema=False)


def families(rt: Runtime) -> dict[str, str]:
    """The capability families one can pool by, with what each measures: the shared ones, then
    any new one a hosted benchmark's tasks name (a plug-in may bring its own)."""
    known = dict(FAMILIES)
    for slug in rt.hosted:
        for family in named_families([rt.definition(slug)]):
            known.setdefault(family, f"named by {slug}")
    return known


def checked_family(rt: Runtime, family: str) -> str | None:
    """The capability family asked for (None: every task).

    Raises:
        UsageError: a family no hosted benchmark could have.
    """
    if not family:
        return None
    known = families(rt)
    if family not in known:
        raise UsageError(f"unknown family {family!r}; there are: {', '.join(known)}")
    return family


def rows(found: Consensus) -> list[dict[str, Any]]:
    """Every aggregation's standings as flat rows (aggregates only: no per-item value)."""
    return [
        {
            "method": a.method,
            "about": a.about,
            "replicates": a.replicates,
            "note": a.note,
            "rank": s.rank,
            "model": s.model,
            "score": s.score,
            "interval": list(s.interval) if s.interval else None,
            "benchmarks": s.benchmarks,
        }
        for a in found.aggregations
        for s in a.standings
    ]


def as_csv(found: Consensus) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        ["method", "rank", "model", "score", "interval_low", "interval_high", "benchmarks"]
    )
    for r in rows(found):
        low, high = r["interval"] or ("", "")
        # a model name is user input: never a formula in a spreadsheet, wherever it starts
        name = spreadsheet_cell(r["model"])
        score = "" if r["score"] is None else f"{r['score']:.6f}"
        writer.writerow([r["method"], r["rank"], name, score, low, high, r["benchmarks"]])
    return out.getvalue()


@router.get("/consensus", response_class=HTMLResponse)
def consensus_page(request: Request, family: str = "") -> Response:
    """Which model is best across the hosted benchmarks: four aggregations side by side."""
    rt = request.app.state.runtime
    found = consensus(rt, checked_family(rt, family))
    return page(
        request, "consensus.html", slug=None, found=found, families=families(rt), family=family
    )


@router.get("/consensus.csv")
def consensus_csv(request: Request, family: str = "") -> Response:
    rt = request.app.state.runtime
    found = consensus(rt, checked_family(rt, family))
    return PlainTextResponse(
        as_csv(found),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="consensus.csv"'},
    )
