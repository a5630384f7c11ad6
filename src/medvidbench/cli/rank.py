"""``medvidbench rank``: which model is best across benchmarks, from offline reports.

Each report is one model's evaluation on one benchmark, written by ``medvidbench evaluate ...
--out R.json --per-item --model-name NAME``; the command groups them by model name and prints
every aggregation of :mod:`medvidbench.core.consensus`, each model's place, score and rank
interval.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from medvidbench.cli import consoles
from medvidbench.cli.app import friendly
from medvidbench.cli.consoles import escape
from medvidbench.cli.params import Argument, Option
from medvidbench.cli.tables import Table
from medvidbench.core.errors import UsageError


def read_reports(paths: list[Path]) -> list[Any]:
    """Each report as a consensus :class:`~medvidbench.core.consensus.Result`.

    Raises:
        UsageError: a report that cannot be read, has no model name, or does not line up with
            the others of its benchmark (another test set or profile).
    """
    from medvidbench import benchmarks
    from medvidbench.core.consensus import Result
    from medvidbench.core.evidence import from_dict
    from medvidbench.core.statistics import Bootstrap

    out: list[Any] = []
    seen: dict[str, tuple[Any, Any]] = {}
    for path in paths:
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
            slug, model = report["benchmark"], str(report.get("model") or "")
            metrics, sha = report["metrics"], report["ground_truth"]["sha256"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}: not a medvidbench evaluation report ({exc})") from None
        if not model:
            raise UsageError(f"{path} names no model: evaluate with --model-name NAME")
        key = (sha, report.get("profile"))
        if seen.setdefault(slug, key) != key:
            raise UsageError(
                f"{path}: the {slug} reports differ in test set or profile; rank like with like"
            )
        stats = report.get("statistics") or {}
        try:
            evidence = from_dict(report["per_item"]) if report.get("per_item") else None
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}: its per_item evidence is damaged ({exc})") from None
        replicates = Bootstrap.replicates_of(stats) if stats else None
        out.append(Result(model, benchmarks.get(slug), metrics, replicates, evidence))
    return out


@friendly
def rank(
    reports: Annotated[
        list[Path],
        Argument(help="Reports of 'medvidbench evaluate --out R.json --per-item --model-name'."),
    ],
    method: Annotated[
        list[str] | None,
        Option("--method", help="Only these aggregations (repeatable; default: all)."),
    ] = None,
    family: Annotated[
        str | None,
        Option(
            "--family",
            help="Only the tasks of one capability family (temporal-localisation, "
            "spatial-grounding, captioning, multiple-choice, ...).",
        ),
    ] = None,
    replicates: Annotated[
        int, Option(min=0, max=10_000, help="Bootstrap replicates for the rank intervals.")
    ] = 200,
    seed: Annotated[int, Option(help="Seed of the Plackett-Luce resamples.")] = 0,
    as_json: Annotated[bool, Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """Rank models across benchmarks: mean, Borda, Kemeny and Plackett-Luce, with intervals.

    Reports are grouped by model name; a model missing from a benchmark is missing there,
    never last.
    """
    from medvidbench.core.consensus import METHODS, aggregate

    chosen = method or list(METHODS)
    try:
        found = aggregate(read_reports(reports), chosen, replicates, seed, family)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if as_json:
        rows = [
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
            for a in found
            for s in a.standings
        ]
        print(json.dumps(rows, indent=2))
        return
    console = consoles.console()
    for agg in found:
        table = Table(title=f"{agg.method}: {agg.about}", title_justify="left")
        for name, side in (
            ("rank", "right"),
            ("model", "left"),
            ("score", "right"),
            ("95 % rank interval", "right"),
            ("benchmarks", "right"),
        ):
            table.add_column(name, justify=side)  # type: ignore[arg-type]
        for s in agg.standings:
            shown = f"{s.interval[0]}-{s.interval[1]}" if s.interval else "n/a"
            score = "" if s.score is None else f"{s.score:.3f}"
            table.add_row(str(s.rank), escape(s.model), score, shown, str(s.benchmarks))
        console.print(table)
        if agg.note:
            console.print(f"[dim]{escape(agg.note)}[/]", highlight=False)
