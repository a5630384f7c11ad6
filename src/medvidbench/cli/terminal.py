"""Reports, validation results and progress lines as the terminal shows them (the CLI's output,
nothing else)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from medvidbench.cli.consoles import escape
from medvidbench.cli.tables import Table
from medvidbench.core import display

if TYPE_CHECKING:
    from medvidbench.cli.consoles import Console
    from medvidbench.core.benchmark import Benchmark, Metric
    from medvidbench.core.errors import ProblemList
    from medvidbench.core.evaluation import Report
    from medvidbench.core.submission import ValidationReport

_STATUS_STYLE = {"complete": "green", "missing": "yellow", "incomplete": "red"}
_VERDICT = {
    "valid": "[bold green]valid[/]: every task is complete",
    "partial": "[bold yellow]partial[/]: accepted; missing tasks are reported as missing, not 0",
    "invalid": "[bold red]invalid[/]",
}


def print_problems(
    problems: ProblemList, console: Console, title: str = "error", style: str = "red"
) -> None:
    """Every kept problem on a line of its own (code and located message), then how many more
    of each code were counted but not kept."""
    for p in problems.items:
        console.print(
            f"[{style}]{title}[/] [dim]{p.code}[/] {escape(p.message)}",
            highlight=False,
            soft_wrap=True,
        )
    if problems.omitted():
        totals = ", ".join(f"{n:,} {code}" for code, n in problems.totals.items())
        console.print(
            f"[{style}]... {problems.omitted():,} more {title}s not shown[/] (totals: {totals})",
            highlight=False,
        )


def print_validation(report: ValidationReport, console: Console) -> None:
    """Print a validation report: per-task coverage, then every problem with its location."""
    layout = f" ({report.layout})" if report.records else ""  # nothing read: no layout either
    console.print(
        f"[bold]{escape(report.source or 'submission')}[/]  {report.size:,} bytes, "
        f"{report.records:,} records{layout}, {report.matched:,} matched",
        highlight=False,
        soft_wrap=True,  # one line for grep, in a pipe too (Rich's width there is 80)
    )
    table = Table(title="Coverage per task", title_justify="left")
    table.add_column("task")
    table.add_column("expected", justify="right")
    table.add_column("matched", justify="right")
    table.add_column("status")
    if report.readable:
        table.add_column("readable", justify="right")
    if report.order_only:
        table.add_column("order only", justify="right")
    for task, cov in report.coverage.items():
        style = _STATUS_STYLE[cov.status]
        row = [task, f"{cov.expected:,}", f"{cov.matched:,}", f"[{style}]{cov.status}[/]"]
        if report.readable:
            row.append(f"{report.readable.get(task, 0):,}")
        if report.order_only:
            row.append(f"{report.order_only.get(task, 0):,}")
        table.add_row(*row)
    if report.coverage:
        console.print(table)
    print_problems(report.errors, console)
    print_problems(report.warnings, console, "warning", "yellow")
    for notice in report.notices:
        console.print(f"[cyan]note[/] {escape(notice)}", highlight=False, soft_wrap=True)
    console.print(f"verdict: {_VERDICT[report.verdict]}")
    if report.readable:
        console.print(
            "checked against the questions file: nothing was scored (scores need the answers)",
            soft_wrap=True,
        )


def print_warnings(report: ValidationReport, console: Console) -> None:
    """What scoring a valid file should not hide: a restored pipeline order, and every
    validation warning in full (order-only matches among them)."""
    if report.restored:
        console.print(f"[cyan]note[/] {escape(report.restored)}", highlight=False)
    for p in report.warnings.items:
        console.print(
            f"[yellow]warning[/] [dim]{p.code}[/] {escape(p.message)}",
            highlight=False,
            soft_wrap=True,
        )
    if report.warnings.omitted():
        console.print(f"[yellow]... {report.warnings.omitted():,} more warnings not shown[/]")


def _fmt(value: object, scale: str = "0-1") -> str:
    if value is None:
        return "[dim]—[/]"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _note(report: Report, metric: Metric) -> str:
    """Why a metric has no value, in the web pages' words (a failed judge said as such)."""
    if report.metrics[metric.key] is not None:
        return ""
    if metric.judged and report.judge is not None and metric.task not in report.missing_tasks:
        return "judge failed"
    return display.absent(metric, report.missing_tasks, judge_on=False)


def print_report(report: Report, bench: Benchmark, console: Console) -> None:
    """Print the benchmark's metrics, per-task diagnostics and judge provenance."""
    title = f"{bench.title} metrics ({report.profile}, scorer {report.scorer_version})"
    table = Table(title=title, title_justify="left")
    stats = report.statistics
    intervals = (stats or {}).get("intervals", {})
    table.add_column("metric")
    table.add_column("value", justify="right")
    if stats:
        table.add_column(f"{stats['confidence']:.0%} interval", justify="right")
    table.add_column("note")
    for m in bench.metrics:  # names, units and absent-value words as the web pages show them
        value = report.metrics[m.key]
        row = [m.column, display.value(value, m.percent) if value is not None else "[dim]—[/]"]
        if stats:
            wide = m.key in (stats.get("widened") or [])
            row.append(display.interval(intervals.get(m.key), m.percent) + (" *" if wide else ""))
        table.add_row(*row, _note(report, m))
    console.print(table)
    if stats:
        console.print(
            f"intervals: {stats['method']}, {stats['replicates']:,} replicates, seed "
            f"{stats['seed']}; clusters: {escape(stats['cluster_rule'])} "
            f"({stats['clusters']:,} clusters)",
            highlight=False,
            soft_wrap=True,
        )
        if stats.get("widened"):
            console.print(
                "* widened: few clusters of items hold this metric (fewer than 30), or all its "
                "items agree; the interval is made wider so that it keeps its 95 %",
                highlight=False,
                soft_wrap=True,
            )
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
    if report.judge:
        j = report.judge
        console.print(
            f"judge: {escape(str(j['model_reported'] or j['model_requested']))} at "
            f"{escape(j['endpoint'])}, prompt {j['prompt_version']}, config {j['config_id']}; "
            f"{j['pairs']:,} pairs, {j['cache_hits']:,} cached, {j['calls']:,} calls, "
            f"{j['retries']:,} retries, {j['failures']:,} failed",
            highlight=False,
            soft_wrap=True,
        )
    if report.similarity:
        sims = ", ".join(f"{k} {_fmt(v)}" for k, v in report.similarity.items() if k != "about")
        console.print(
            f"[cyan]similarity diagnostic (0-1, not a leaderboard metric)[/]: {sims}",
            highlight=False,
        )


@contextmanager
def progress_bar(console: Console, enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A task-by-task progress line for long evaluations; a no-op callback when disabled."""
    if not enabled:
        yield lambda task, done, total: None
        return
    with console.status("scoring") as line:

        def advance(task: str, done: int, total: int) -> None:
            line.update(f"scored {escape(task)}, {done}/{total} tasks", bar=_bar(done, total))

        yield advance


@contextmanager
def count_bar(console: Console, label: str, enabled: bool) -> Iterator[Callable[[int, int], None]]:
    """A done/total progress line (judging); a no-op callback when disabled."""
    if not enabled:
        yield lambda done, total: None
        return
    with console.status(label) as line:
        yield lambda done, total: line.update(f"{label} {done:,}/{total:,}", bar=_bar(done, total))


def _bar(done: int, total: int, width: int = 30) -> str:
    """``done`` of ``total`` as a bar of ``width`` columns."""
    full = round(width * done / total) if total > 0 else 0
    return f"[green]{'━' * full}[/][dim]{'━' * (width - full)}[/]"
