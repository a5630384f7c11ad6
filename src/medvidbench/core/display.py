"""How metrics and counts read, the same on every page and in the command line.

A metric's display name (``column``), its unit (a percentage or 3 decimals) and the words for a
value that is absent (not submitted, not judged, pending judge) come from the benchmark's
metric table; the web pages and ``medvidbench submit`` both format through here.
"""

from __future__ import annotations

from typing import Any

from medvidbench.core.benchmark import Metric


def value(number: Any, percent: bool = False) -> str:
    """A metric value: a percentage with 2 decimals for a metric shown as one, else 3 decimals;
    an em dash when missing.

    Examples:
        >>> value(0.5), value(0.5, percent=True), value(None)
        ('0.500', '50.00%', '—')
    """
    if number is None:
        return "—"
    return f"{100 * float(number):.2f}%" if percent else f"{float(number):.3f}"


def interval(bounds: Any, percent: bool = False) -> str:
    """A 95 % interval as ``low – high`` in the metric's unit, or an em dash."""
    if not bounds or len(bounds) != 2 or None in bounds:
        return "—"
    return f"{value(bounds[0], percent)} – {value(bounds[1], percent)}"


def absent(metric: Metric, missing_tasks: list[str] | tuple[str, ...], judge_on: bool) -> str:
    """Why a metric has no value: its task was not submitted, it waits for the judge, no judge
    is configured, or (for anything else) an em dash."""
    if metric.task and metric.task in missing_tasks:
        return "not submitted"
    if metric.judged:
        return "pending judge" if judge_on else "not judged"
    return "—"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the right number.

    Examples:
        >>> count(1, "metric"), count(3, "metric"), count(0, "entry", "entries")
        ('1 metric', '3 metrics', '0 entries')
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def public_provenance(judge: dict[str, Any] | None) -> dict[str, Any] | None:
    """A judge's provenance as shown to anyone but staff: without its endpoint (an operator's
    internal address); the model, prompt, settings and configuration id say what judged."""
    if judge is None:
        return None
    return {k: v for k, v in judge.items() if k != "endpoint"}
