"""Normalisation statistics fitted on a reference model's predictions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark
from medvidbench.core.errors import UsageError
from medvidbench.core.rewards import JUDGE, SCORE, SIMILARITY, RewardStats
from medvidbench.rewards.rewarder import Rewarder
from medvidbench.rewards.rows import (
    RewardInputError,
    answered_rows,
    completion_text,
    declared_options,
    decode_row,
    spec_of,
)

if TYPE_CHECKING:
    from medvidbench.core.judge.client import Judge

Row = tuple[str, Any, Mapping[str, Any]]  # (benchmark slug, item, extras), as decode_row gives


def fit(
    predictions: str | Path | bytes,
    ground_truth: str | Path | bytes,
    *,
    benchmark: Benchmark | str | None = None,
    judge: Judge | None = None,
    options: Mapping[str, Any] | None = None,
    min_samples: int | None = None,
    embedder: Any = None,
    variants: Mapping[str, str] | None = None,
) -> RewardStats:
    """Normalisation statistics from a reference model's predictions on a (training or
    validation) set: the raw terms of every prediction, summarised per (task, dataset, term).

    Raises:
        UsageError: when the prediction file cannot be matched to the ground truth.
    """
    from medvidbench.core.rewards import MIN_SAMPLES

    bench = benchmark if isinstance(benchmark, Benchmark) else benchmarks.get(benchmark)
    gt = bench.load_ground_truth(ground_truth)
    name = "" if isinstance(predictions, bytes) else str(predictions)
    matched = bench.validate_submission(predictions, gt, name=name)
    if not matched.report.ok:
        errors = matched.report.errors
        shown = "; ".join(p.message for p in errors.items[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise UsageError(
            f"the reference predictions do not match the ground truth: {shown}{more}; "
            "`medvidbench validate` lists every problem"
        )
    rows, answers = answered_rows(bench, gt, matched)
    if not rows:
        raise UsageError("the reference predictions answer no item of a task with a reward")
    return _fit_rows(
        bench,
        rows,
        answers,
        Rewarder(
            judge=judge,
            options={bench.slug: {**declared_options(bench, matched), **(options or {})}},
            embedder=embedder,
            board_format=False,  # the statistics are of the raw terms, which it does not change
            variants=variants,
        ),
        MIN_SAMPLES if min_samples is None else min_samples,
        {
            "predictions": Path(name).name if name else "",
            "ground_truth_sha256": gt.sha256,
        },
    )


def fit_rollouts(
    rollouts: str | Path,
    *,
    benchmark: Benchmark | str | None = None,
    judge: Judge | None = None,
    options: Mapping[str, Any] | None = None,
    min_samples: int | None = None,
    embedder: Any = None,
    variants: Mapping[str, str] | None = None,
    last: int | None = None,
) -> RewardStats:
    """Normalisation statistics from the policy's own outputs: a JSON-lines rollouts file of
    ``{"completion", "ground_truth"}`` rows (what the TRL reward function's ``rollouts`` option
    writes; ``ground_truth`` is the column ``medvidbench rewards prepare`` writes), for when the
    policy has outgrown its reference (:mod:`medvidbench.rewards.saturation`).

    Args:
        last: Only the last N rows of the benchmark (the policy as it is now); None: all.

    Raises:
        UsageError: naming the line of a malformed row, or when no row is of the benchmark.
    """
    from medvidbench.core.rewards import MIN_SAMPLES

    bench = benchmark if isinstance(benchmark, Benchmark) else benchmarks.get(benchmark)
    rows, texts = read_rollouts(rollouts, bench.slug)
    if last is not None:
        rows, texts = rows[-last:], texts[-last:]
    if not rows:
        raise UsageError(f"{rollouts}: no rollout of a {bench.slug} task with a reward")
    return _fit_rows(
        bench,
        rows,
        texts,
        Rewarder(
            judge=judge,
            options={bench.slug: dict(options or {})},
            embedder=embedder,
            board_format=False,
            variants=variants,
        ),
        MIN_SAMPLES if min_samples is None else min_samples,
        {"predictions": Path(rollouts).name, "source": "rollouts"},
    )


def read_rollouts(path: str | Path, slug: str) -> tuple[list[Row], list[str]]:
    """A rollouts file's rows of one benchmark, decoded, and their completions' texts."""
    rows: list[Row] = []
    texts: list[str] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read rollouts {path}: {exc.strerror}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path} line {n}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{where}: not JSON ({exc})") from None
        if not isinstance(data, dict) or "completion" not in data:
            raise RewardInputError(f"{where}: expected an object with completion and ground_truth")
        row = decode_row(data.get("ground_truth"), f"{where}: ground_truth")
        text = completion_text(data["completion"], f"{where}: completion")
        if row[0] == slug:
            rows.append(row)
            texts.append(text)
    return rows, texts


def _fit_rows(
    bench: Benchmark,
    rows: Sequence[Row],
    answers: Sequence[Any],
    rewarder: Rewarder,
    min_samples: int,
    provenance: Mapping[str, Any],
) -> RewardStats:
    """The raw terms of every row, summarised per (task, dataset, term)."""
    out = rewarder.score_items(rows, answers)
    values: dict[tuple[str, str, str], list[float]] = {}
    for n, (_, item, _) in enumerate(rows):
        for term in (SCORE, SIMILARITY, JUDGE):
            v = out.terms[term][n]
            if not np.isnan(v):
                values.setdefault((item.task, item.dataset, term), []).append(float(v))
    judge = rewarder.judge
    variants = rewarder.variants
    return RewardStats.fit(
        bench.slug,
        bench.scorer_version,
        spec_of(bench).profile,
        values,
        min_samples,
        {
            **provenance,
            "rows": len(rows),
            "judge": judge.config.config_id if judge is not None else None,
            "similarity_model": "all-MiniLM-L6-v2",
            **({"variants": dict(variants)} if variants else {}),
        },
    )
