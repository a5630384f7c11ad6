"""Rich renderings of reports for the terminal (the CLI's output, nothing else)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from medvidbench.matching import ValidationReport

_STATUS_STYLE = {"complete": "green", "missing": "yellow", "incomplete": "red"}
_VERDICT = {
    "valid": "[bold green]valid[/]: every task is complete",
    "partial": "[bold yellow]partial[/]: accepted; missing tasks are reported as missing, not 0",
    "invalid": "[bold red]invalid[/]",
}


def print_validation(report: ValidationReport, console: Console) -> None:
    """Print a validation report: per-task coverage, then every problem with its location."""
    console.print(
        f"[bold]{escape(report.source or 'submission')}[/]  {report.size:,} bytes, "
        f"{report.records:,} records ({report.layout}), {report.matched:,} matched",
        highlight=False,
    )
    table = Table(title="Coverage per task", title_justify="left")
    table.add_column("task")
    table.add_column("expected", justify="right")
    table.add_column("matched", justify="right")
    table.add_column("status")
    for task, cov in report.coverage.items():
        style = _STATUS_STYLE[cov.status]
        table.add_row(task, f"{cov.expected:,}", f"{cov.matched:,}", f"[{style}]{cov.status}[/]")
    if report.coverage:
        console.print(table)
    for title, problems, style in (
        ("error", report.errors, "red"),
        ("warning", report.warnings, "yellow"),
    ):
        for p in problems.items:
            console.print(
                f"[{style}]{title}[/] [dim]{p.code}[/] {escape(p.message)}",
                highlight=False,
                soft_wrap=True,
            )
        if problems.omitted():
            totals = ", ".join(f"{n:,} {code}" for code, n in problems.totals.items())
            console.print(
                f"[{style}]... {problems.omitted():,} more {title}s not shown[/] "
                f"(totals: {totals})",
                highlight=False,
            )
    for notice in report.notices:
        console.print(f"[cyan]note[/] {escape(notice)}", highlight=False, soft_wrap=True)
    console.print(f"verdict: {_VERDICT[report.verdict]}")
