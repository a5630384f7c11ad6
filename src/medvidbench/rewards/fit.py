"""Normalisation statistics fitted on a reference model's predictions."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark
from medvidbench.core.errors import UsageError
from medvidbench.core.rewards import JUDGE, SCORE, SIMILARITY, RewardStats
from medvidbench.rewards.rewarder import Rewarder
from medvidbench.rewards.rows import answered_rows, spec_of

if TYPE_CHECKING:
    from medvidbench.core.judge.client import Judge


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
    spec = spec_of(bench)
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
    rewarder = Rewarder(
        judge=judge,
        options={bench.slug: {**matched.options, **(options or {})}},
        embedder=embedder,
        board_format=False,  # the statistics are of the raw terms, which it does not change
        variants=variants,
    )
    out = rewarder.score_items(rows, answers)
    values: dict[tuple[str, str, str], list[float]] = {}
    for n, (_, item, _) in enumerate(rows):
        for name in (SCORE, SIMILARITY, JUDGE):
            v = out.terms[name][n]
            if not np.isnan(v):
                values.setdefault((item.task, item.dataset, name), []).append(float(v))
    return RewardStats.fit(
        bench.slug,
        bench.scorer_version,
        spec.profile,
        values,
        MIN_SAMPLES if min_samples is None else min_samples,
        {
            "predictions": Path(name).name if name else "",
            "ground_truth_sha256": gt.sha256,
            "rows": len(rows),
            "judge": judge.config.config_id if judge is not None else None,
            "similarity_model": "all-MiniLM-L6-v2",
            **({"variants": dict(variants)} if variants else {}),
        },
    )
