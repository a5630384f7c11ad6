"""Whether an answer is in a format its task's scorer reads, without the reference answer.

Checking a file against the public questions file (no answers) cannot score it, but it can say
which answers the board's default profile (``leaderboard-v1``) would read nothing from, so they
score 0. The structured tasks use their own parsers' checks (STG's: a box its parser reads at
whatever time keys the reference has); the free-text tasks (next action, captions) only need
some text.
"""

from __future__ import annotations

from collections.abc import Callable

from medvidbench.benchmarks.medvidbench.tasks import cvs, dvc, sa, stg, tal
from medvidbench.core import linear_re

_READERS: dict[str, Callable[[str], bool]] = {
    "cvs_assessment": lambda t: bool(cvs.parse(t)),
    "skill_assessment": sa.reads_something,
    "tal": tal.reads_something,
    "dense_captioning": dvc.reads_something,
    "stg": stg.reads_something,
}

FORMATS = {
    "cvs_assessment": "the three criteria with 0/1 scores",
    "skill_assessment": "an N/5 score per aspect",
    "tal": "time spans such as '22.0-78.0, 89.0-94.0 seconds.'",
    "dense_captioning": "one line per event, such as '0.0-10.0 seconds: caption'",
    "stg": "boxes such as '2.0 seconds: [x1, y1, x2, y2]'",
}


def readable(task: str, text: str) -> bool:
    """Whether the task's scorer reads something from ``text`` under ``leaderboard-v1``.

    Examples:
        >>> readable("tal", "12.0-30.5 seconds.")
        True
        >>> readable("tal", "I cannot tell.")
        False
        >>> readable("next_action", "Insert the trocar.")
        True
    """
    reader = _READERS.get(task)
    return reader(text) if reader is not None else bool(text.strip())


def check(
    tasks: list[str], texts: list[str | None], labels: list[str]
) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Per task, how many answers its scorer reads, and a few of those it reads nothing from.

    Args:
        tasks: ``tasks[i]``, the task of test question i.
        texts: ``texts[i]``, the answer given to it (None: none).
        labels: ``labels[i]``, how the message names question i.
    """
    counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    with linear_re.budgeted():
        found = [t is not None and readable(task, t) for task, t in zip(tasks, texts, strict=True)]
    for task, text, label, ok in zip(tasks, texts, labels, found, strict=True):
        if text is None:
            continue
        if ok:
            counts[task] = counts.get(task, 0) + 1
        else:
            counts.setdefault(task, 0)
            shown = examples.setdefault(task, [])
            if len(shown) < 3:
                shown.append(f"{label}: {text[:80]!r}")
    return counts, examples
