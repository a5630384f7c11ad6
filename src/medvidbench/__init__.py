"""MedVidBench: an evaluator and self-hostable leaderboard for medical video-language models.

``medvidbench.evaluate(predictions, ground_truth, profile=...)`` is the library entry point.
"""

from __future__ import annotations

__version__ = "0.1.0"

# Imported here, after __version__, so that the name ``medvidbench.evaluate`` is the function:
# the submodule of the same name is bound first, during this import, and then replaced.
from medvidbench.evaluate import evaluate

__all__ = ["__version__", "evaluate"]
