"""MedVidBench: an evaluator and self-hostable leaderboard for medical video-language models.

``medvidbench.evaluate(predictions, ground_truth, profile=...)`` is the library entry point.
It is imported on first use, so that ``import medvidbench`` stays cheap for every command that
does not score anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Report", "__version__", "evaluate"]

if TYPE_CHECKING:
    from medvidbench.core.evaluation import Report, evaluate


def __getattr__(name: str) -> Any:
    if name in ("evaluate", "Report"):
        from medvidbench.core import evaluation

        return getattr(evaluation, name)
    raise AttributeError(f"module 'medvidbench' has no attribute {name!r}")
