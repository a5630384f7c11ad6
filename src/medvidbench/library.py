"""The library's entry points: evaluate or validate a file on any installed benchmark by slug.

They resolve the benchmark through :mod:`medvidbench.benchmarks` (default: the only installed
benchmark, or ``MEDVIDBENCH_BENCHMARK``) and call the shared core loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark

if TYPE_CHECKING:
    from medvidbench.core.evaluation import Report
    from medvidbench.core.submission import MatchedSubmission


def benchmark(which: Benchmark | str | None = None) -> Benchmark:
    """A benchmark definition from itself, its slug, or None (the default benchmark)."""
    return which if isinstance(which, Benchmark) else benchmarks.get(which)


def evaluate(
    predictions: Any,
    ground_truth: Any,
    profile: str | None = None,
    *,
    benchmark: Benchmark | str | None = None,
    **options: Any,
) -> Report:
    """Score a prediction file (path, bytes or matched submission) against a test set.

    Keyword options are those of :func:`medvidbench.core.evaluation.evaluate` (``tasks``,
    ``ctx``, ``progress``, ``judge``, ``judge_progress``, ``similarity``, ``options``,
    ``bootstrap``, ``seed``, ``on_result``), which runs its stages (plan, score, judge,
    assemble) in turn.
    """
    from medvidbench.core.evaluation import evaluate as run

    return run(_resolve(benchmark), predictions, ground_truth, profile, **options)


def load_ground_truth(
    source: str | Path | bytes,
    *,
    benchmark: Benchmark | str | None = None,
    max_bytes: int | None = None,
) -> Any:
    """Load and validate a benchmark's test set (raises listing every problem); no file is
    read past ``max_bytes`` (None: the default limit)."""
    bench = _resolve(benchmark)
    if max_bytes is None:
        return bench.load_ground_truth(source)
    return bench.load_ground_truth(source, max_bytes)


def validate(
    source: str | Path | bytes,
    ground_truth: Any,
    *,
    benchmark: Benchmark | str | None = None,
    name: str = "",
    max_bytes: int | None = None,
) -> MatchedSubmission:
    """Validate a prediction file against a loaded test set (never raises on its content);
    no file is read past ``max_bytes`` (None: the default limit)."""
    bench = _resolve(benchmark)
    if max_bytes is None:
        return bench.validate_submission(source, ground_truth, name=name)
    return bench.validate_submission(source, ground_truth, max_bytes, name=name)


_resolve = benchmark


def judge_from_settings(
    benchmark: Benchmark | str | None = None, model: str | None = None, cache: Path | None = None
) -> Any:
    """The LLM judge the settings describe (``OPENAI_*`` / ``MEDVIDBENCH_JUDGE_*``), asking the
    benchmark's rubric, with its SQLite cache. Imports the judge client (the OpenAI SDK).

    Raises:
        UsageError: when OpenAI's own endpoint would be called without an API key.
    """
    from medvidbench.core.judge.client import judge_from_settings as build

    bench = _resolve(benchmark)
    return build(bench.rubric.version if bench.rubric else "", model, cache)
