"""The benchmark's tasks: one module per task, registered like any third-party task would be.

Importing this package is cheap; :func:`load_builtin_scorers` imports the eight built-in scorer
modules, each of which calls :func:`medvidbench.core.scoring.register` for itself.
"""

from importlib import import_module

from medvidbench.benchmarks.medvidbench.tasks.registry import TASKS, TaskInfo, task_for_qa_type
from medvidbench.core.scoring import SCORERS, Scorer, register

BUILTIN_SCORER_MODULES = ("tal", "stg", "nap", "dvc", "sa", "cvs")

__all__ = [
    "SCORERS",
    "TASKS",
    "Scorer",
    "TaskInfo",
    "load_builtin_scorers",
    "register",
    "task_for_qa_type",
]


def load_builtin_scorers() -> dict[str, Scorer]:
    """Register the built-in scorers (idempotent) and return the registry."""
    for name in BUILTIN_SCORER_MODULES:
        import_module(f"medvidbench.benchmarks.medvidbench.tasks.{name}")
    return SCORERS
