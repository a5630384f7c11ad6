"""MedVidQA's one task scored as the official evaluation scores it (MedVidQACL, d9a7849).

Per question, one predicted span against the clipped truth:

- **IoU** is the official formula: the intersection's signed length over the length of the span
  covering both, ``(min(pe, ge) - max(ps, gs)) / (max(pe, ge) - min(ps, gs))``, then
  ``max(0, .)``. No ``+1``, no clipping of the prediction, no reordering of a reversed span
  (which therefore scores 0 against a well-formed truth). When the covering span has length 0
  the official code's real path divides float32 zeros, gets NaN (or minus infinity) and
  ``max(0.0, .)`` turns it into 0: we return 0.
- **R@1, IoU=t** for t = 0.3, 0.5, 0.7 is the percentage of questions whose IoU is at least t,
  compared exactly (0.49999999999999994 is not 0.5): ``count / N * 100``.
- **mIoU** is ``mean(IoU) * 100`` over every question, the mean taken by numpy as the official
  code takes it.

N is every test question: a question whose answer names no span scores IoU 0 (the kernel
refuses a file that leaves one out). The headline values use the official arithmetic above;
each per-sample value is the same number on the percent scale (100 or 0 for a threshold,
``100 * IoU`` for mIoU), so the ratio of their sums (the bootstrap's) agrees to rounding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from medvidbench.benchmarks.medvidqa.testset import TASK, Question
from medvidbench.benchmarks.medvidqa.times import Segment, parse_span
from medvidbench.core.benchmark import Profile
from medvidbench.core.scoring import (
    SampleResult,
    TaskResult,
    TaskScorer,
    diagnostics,
    group_by_dataset,
)

# (metric key, IoU threshold) of each threshold accuracy, and the mean IoU's key.
THRESHOLDS = (("r1_iou_03", 0.3), ("r1_iou_05", 0.5), ("r1_iou_07", 0.7))
MIOU = "miou"
# mIoU first: the item browser judges an item by its scorer's first metric (its IoU, here).
METRIC_KEYS = (MIOU, *(key for key, _ in THRESHOLDS))


def iou(pred: Segment, truth: Segment) -> float:
    """The official IoU of a predicted span against the truth, in seconds.

    Examples:
        >>> iou((15, 25), (10, 20))  # 5 / 15
        0.3333333333333333
        >>> iou((5, 25), (10, 20)), iou((20, 30), (10, 20)), iou((18, 12), (10, 20))
        (0.5, 0.0, 0.0)
        >>> iou((20, 10), (18, 8))  # both reversed: (-12) / (-8), as the official code gives
        1.5
        >>> iou((15, 15), (15, 15))  # no covering span: 0, as the official model path gives
        0.0
    """
    (ps, pe), (gs, ge) = pred, truth
    hull = max(pe, ge) - min(ps, gs)
    if hull == 0:
        return 0.0  # the intersection is then <= 0: the official NaN or -inf, clamped to 0
    return max(0.0, (min(pe, ge) - max(ps, gs)) / hull)


def official_metrics(ious: Sequence[float]) -> dict[str, float | None]:
    """The four metrics from per-question IoUs, with the official arithmetic (None: no
    question).

    Examples:
        >>> official_metrics([1.0, 0.3, 0.0])["r1_iou_03"]
        66.66666666666666
    """
    if not ious:
        return dict.fromkeys(METRIC_KEYS)
    import numpy as np

    total = float(len(ious))
    out: dict[str, float | None] = {
        key: float(sum(1 for v in ious if v >= t)) / total * 100.0 for key, t in THRESHOLDS
    }
    out[MIOU] = float(np.mean(np.asarray(ious, dtype=np.float64)) * 100.0)
    return out


def per_sample(value: float) -> dict[str, float]:
    """One question's values on the percent scale (what the bootstrap sums)."""
    out = {key: 100.0 if value >= t else 0.0 for key, t in THRESHOLDS}
    out[MIOU] = 100.0 * value
    return out


def read(prediction: Any) -> Segment | None:
    """A prediction as a span: the challenge format's two numbers as they are, or the first
    span a text states (:func:`~medvidbench.benchmarks.medvidqa.times.parse_span`)."""
    if isinstance(prediction, str):
        return parse_span(prediction)
    if isinstance(prediction, list | tuple) and len(prediction) == 2:
        return float(prediction[0]), float(prediction[1])
    return None


class LocalisationScorer(TaskScorer[Question]):
    """R@1 at IoU 0.3, 0.5 and 0.7, and mIoU, all in percent."""

    task = TASK
    metric_keys: tuple[str, ...] = METRIC_KEYS

    def parse(self, text: Any, item: Question, profile: Profile) -> Segment | None:
        return read(text)

    def score_sample(
        self, parsed: Segment | None, item: Question, profile: Profile
    ) -> SampleResult:
        value = 0.0 if parsed is None else iou(parsed, (item.start, item.end))
        return SampleResult(
            item.index,
            item.dataset,
            parsed is not None,
            per_sample(value),
            "" if parsed is not None else "no time span found in the answer: IoU 0",
            {"iou": value, "span": None if parsed is None else list(parsed)},
        )

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        per_dataset: dict[str, dict[str, float | int | None]] = {
            dataset: {**official_metrics(_ious(rows)), "count": len(rows)}
            for dataset, rows in group_by_dataset(results).items()
        }
        diag = diagnostics(results)
        diag.update(_span_counts(results))
        return TaskResult(self.task, official_metrics(_ious(results)), per_dataset, diag, results)


def _ious(results: Sequence[SampleResult]) -> list[float]:
    return [float((r.extra or {}).get("iou", 0.0)) for r in results]


def _span_counts(results: Sequence[SampleResult]) -> dict[str, int]:
    """How many read spans were reversed (scored 0 unless the truth is too) or empty."""
    spans = [s for r in results if (s := (r.extra or {}).get("span")) is not None]
    return {
        "reversed_spans": sum(1 for s, e in spans if s > e),
        "empty_spans": sum(1 for s, e in spans if s == e),
    }


@cache
def scorers() -> Mapping[str, TaskScorer[Question]]:
    """The rule-based scorers by task (one task)."""
    return {TASK: LocalisationScorer()}
