"""MedVidBench: an evaluator and self-hostable leaderboard for medical video-language models.

``medvidbench.evaluate(predictions, ground_truth, profile=..., benchmark=...)`` is the library
entry point (default benchmark: the only installed one, or ``MEDVIDBENCH_BENCHMARK``).
It is imported on first use, so that ``import medvidbench`` stays cheap for every command that
does not score anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from medvidbench.version import __version__

__all__ = ["Report", "__version__", "evaluate"]

if TYPE_CHECKING:
    from medvidbench.core.evaluation import Report
    from medvidbench.library import evaluate


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from medvidbench.library import evaluate

        return evaluate
    if name == "Report":
        from medvidbench.core.evaluation import Report

        return Report
    raise AttributeError(f"module 'medvidbench' has no attribute {name!r}")
