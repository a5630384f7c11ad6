"""Rich renderings of reports for the terminal (the CLI's output, nothing else)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from medvidbench.evaluate import Report
from medvidbench.matching import ValidationReport
from medvidbench.profiles import METRICS

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


def _fmt(value: object, scale: str = "0-1") -> str:
    if value is None:
        return "[dim]—[/]"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def print_report(report: Report, console: Console) -> None:
    """Print the 10 leaderboard metrics, then per-task diagnostics."""
    title = f"MedVidBench metrics ({report.profile}, scorer {report.scorer_version})"
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("note")
    for m in METRICS:
        value = report.metrics[m.key]
        status = report.per_task.get(m.task, {}).get("status", "not in test set")
        note = (
            ""
            if value is not None
            else ("pending: no judge configured" if m.judged and status != "missing" else status)
        )
        table.add_row(m.column, _fmt(value), note)
    console.print(table)
    tasks = Table(title="Per task", title_justify="left")
    for col in ("task", "status", "samples", "scored", "parse rate"):
        tasks.add_column(col, justify="left" if col in ("task", "status") else "right")
    for task, info in report.per_task.items():
        rate = info.get("parse_rate")
        tasks.add_row(
            task,
            info["status"],
            f"{info.get('count', 0):,}",
            f"{info['evaluated']:,}" if "evaluated" in info else "—",
            f"{rate:.1%}" if isinstance(rate, float) else "—",
        )
    console.print(tasks)
    if report.missing_tasks:
        console.print(
            f"[yellow]missing tasks[/] (not scored, not zero): {', '.join(report.missing_tasks)}",
            highlight=False,
        )


@contextmanager
def progress_bar(console: Console, enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A task-by-task progress bar for long evaluations; a no-op callback when disabled."""
    if not enabled:
        yield lambda task, done, total: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} tasks"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        job = bar.add_task("scoring", total=None)

        def advance(task: str, done: int, total: int) -> None:
            bar.update(job, description=f"scored {task}", completed=done, total=total)

        yield advance
