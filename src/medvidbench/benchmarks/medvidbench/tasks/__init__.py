"""MedVidBench's tasks: one module per task, each exposing its scorer as ``SCORER``.

Importing this package is cheap; :func:`rule_based_scorers` imports the six rule-based scorer
modules. The judged caption scorers live in :mod:`.captions`.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING

from medvidbench.benchmarks.medvidbench.tasks.registry import TASKS, TaskInfo, task_for_qa_type

if TYPE_CHECKING:
    from medvidbench.benchmarks.medvidbench.groundtruth import Sample
    from medvidbench.core.scoring import TaskScorer

RULE_BASED_MODULES = ("tal", "stg", "nap", "dvc", "sa", "cvs")

__all__ = ["TASKS", "TaskInfo", "rule_based_scorers", "task_for_qa_type"]


@cache
def rule_based_scorers() -> dict[str, TaskScorer[Sample]]:
    """The rule-based scorers by task, imported on first use."""
    scorers: dict[str, TaskScorer[Sample]] = {}
    for name in RULE_BASED_MODULES:
        scorer = import_module(f"{__name__}.{name}").SCORER
        scorers[scorer.task] = scorer
    return scorers
