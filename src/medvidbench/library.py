"""The library's entry points: evaluate or validate a file on any installed benchmark by slug.

They resolve the benchmark through :mod:`medvidbench.benchmarks` (default: the only installed
benchmark, or ``MEDVIDBENCH_BENCHMARK``) and call the shared core loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark
from medvidbench.core.errors import UsageError

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
    """Score predictions against a test set.

    Args:
        predictions: A prediction file (path or bytes), its records (a list of dicts, as
            ``json.load`` gives them), or a matched submission.
        ground_truth: A loaded test set, a ground-truth file (path or bytes) or its records.
        profile: One of the benchmark's profiles (default: its first).
        benchmark: The benchmark, its slug, or None (the default benchmark).
        **options: Those of :func:`medvidbench.core.evaluation.evaluate` (``tasks``, ``ctx``,
            ``progress``, ``judge``, ``judge_progress``, ``similarity``, ``options``,
            ``bootstrap``, ``seed``, ``on_result``, ``per_item``), which runs its stages (plan,
            score, judge, assemble) in turn.

    Raises:
        InvalidSubmissionError: when the predictions are invalid, listing every problem.
        UsageError: for something that is not predictions at all (say, a number).
    """
    from medvidbench.core.evaluation import evaluate as run
    from medvidbench.core.submission import MatchedSubmission

    predictions, ground_truth = _records(predictions), _records(ground_truth)
    if not isinstance(predictions, str | Path | bytes | MatchedSubmission):
        raise UsageError(
            "expected predictions as a file path, bytes, a list of records or a matched "
            f"submission, got {type(predictions).__name__}{_hint(predictions)}"
        )
    if not isinstance(ground_truth, str | Path | bytes) and not hasattr(ground_truth, "samples"):
        raise UsageError(
            "expected the ground truth as a file path, bytes, a list of records or a loaded "
            f"test set, got {type(ground_truth).__name__}{_hint(ground_truth)}"
        )
    return run(_resolve(benchmark), predictions, ground_truth, profile, **options)


def _hint(value: Any) -> str:
    """How to hand a table over (a pandas DataFrame: its records)."""
    if hasattr(value, "to_dict") and hasattr(value, "columns"):
        return ' (a table: pass its records, df.to_dict("records"))'
    return ""


def _records(value: Any) -> Any:
    """Records in memory (a list, or a dict keyed "0", "1", ...) as the JSON file they would
    be, so that they are checked exactly as an uploaded file is; anything else unchanged."""
    if isinstance(value, list | tuple | dict):
        import msgspec

        try:
            return msgspec.json.encode(list(value) if isinstance(value, tuple) else value)
        except (TypeError, msgspec.EncodeError) as exc:
            raise UsageError(f"the records cannot be read as JSON: {exc}") from None
    return value


def load_ground_truth(
    source: str | Path | bytes, *, benchmark: Benchmark | str | None = None
) -> Any:
    """Load and validate a benchmark's test set (raises listing every problem)."""
    return _resolve(benchmark).load_ground_truth(source)


def validate(
    source: str | Path | bytes | list[Any],
    ground_truth: Any,
    *,
    benchmark: Benchmark | str | None = None,
    name: str = "",
) -> MatchedSubmission:
    """Validate a prediction file (path, bytes or its records) against a loaded test set
    (never raises on its content)."""
    bench = _resolve(benchmark)
    return bench.validate_submission(_records(source), ground_truth, name=name)


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
    return build(bench.judging.rubric.version if bench.judging else "", model, cache)
