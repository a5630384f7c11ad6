"""The overlap arithmetic written out for speed gives, bit for bit, the formulas as written.

``tal.iou``, ``stg.box_iou`` and ``dvc.f1`` replace min/max calls by comparisons and find each segment's best
overlap once for all thresholds (``dvc.f1`` counts the bests over each threshold by bisecting
them sorted); here the formulas are written plainly (as metrics.md states
them) and compared on random segments: floats and whole frames, touching, nested, empty and
reversed segments, repeated times and infinite ones.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from medvidbench.benchmarks.medvidbench.tasks import dvc, stg, tal

Segment = tuple[float, float]


def plain_iou(a: Segment, b: Segment) -> float:
    union = max(a[1], b[1]) - min(a[0], b[0])
    if union <= 0:
        return 0.0
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0])) / union


def plain_greedy(gt: Sequence[Segment], pred: Sequence[Segment], theta: float) -> list[float]:
    used: set[int] = set()
    matched = []
    for g in gt:
        best, best_j = 0.0, -1
        for j, p in enumerate(pred):
            if j not in used and (v := plain_iou(g, p)) > best:
                best, best_j = v, j
        if best_j >= 0 and best >= theta:
            used.add(best_j)
            matched.append(best)
    return matched


def plain_f1(gt: Sequence[Segment], pred: Sequence[Segment]) -> float:
    precisions, recalls = [], []
    table = [[dvc.tiou(p, g) for g in gt] for p in pred]
    for theta in dvc.THRESHOLDS:
        covered_p = sum(any(v > theta for v in row) for row in table)
        covered_g = sum(any(table[i][j] > theta for i in range(len(pred))) for j in range(len(gt)))
        precisions.append(covered_p / max(len(pred), 1))
        recalls.append(covered_g / len(gt))
    p, r = sum(precisions) / 3, sum(recalls) / 3
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _segments(rng: random.Random, whole: bool) -> list[Segment]:
    times = [0, 1, 2, 5, 10, 10.5, 30, 0.1, 0.2, 0.30000000000000004]
    out = []
    for _ in range(rng.randint(0, 6)):
        a = rng.choice(times) if rng.random() < 0.4 else rng.uniform(0, 60)
        b = a + (rng.choice([0, 1, 5]) if rng.random() < 0.3 else rng.uniform(-5, 30))
        if whole:
            a, b = int(a), int(b)
        out.append((a, b))
    if rng.random() < 0.05:
        out.append((math.inf, math.inf))
    return out


def _same(x: float, y: float) -> bool:
    return (x == y and type(x) is type(y)) or (x != x and y != y)


def test_iou_and_greedy_matching_are_the_formulas() -> None:
    rng = random.Random(11)
    for n in range(4000):
        gt, pred = _segments(rng, n % 2 == 0), _segments(rng, n % 3 == 0)
        for g in gt:
            for p in pred:
                assert _same(tal.iou(g, p), plain_iou(g, p)), (g, p)
        for theta in tal.THRESHOLDS:
            assert tal.greedy_matches(gt, pred, theta) == plain_greedy(gt, pred, theta)
        if gt:  # v1's per-sample values: one IoU table for both thresholds
            frames_g = [(a * 25.0, b * 25.0) for a, b in gt]
            frames_p = [(a * 25.0, b * 25.0) for a, b in pred]
            v1 = tal.score(gt, pred, 25.0, strict=False)
            for theta in tal.THRESHOLDS:
                matched = plain_greedy(frames_g, frames_p, theta)
                key = f"tag_miou_{round(theta * 10):02d}"
                assert v1[key] == (sum(matched) / len(matched) if matched else 0.0)


def test_dvc_f1_is_the_formula() -> None:
    rng = random.Random(12)
    checked = 0
    for n in range(4000):
        gt, pred = _segments(rng, n % 2 == 0), _segments(rng, n % 3 == 0)
        if not gt:
            continue
        try:
            expected = plain_f1(gt, pred)
        except ZeroDivisionError:  # a tIoU denominator of exactly zero: both raise
            try:
                dvc.f1(gt, pred)
            except ZeroDivisionError:
                continue
            raise AssertionError((gt, pred)) from None
        assert _same(dvc.f1(gt, pred), expected), (gt, pred)
        checked += 1
    assert checked > 3000


def plain_box_iou(a: list[float], b: list[float]) -> float:
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / max(union, 1e-6)


def test_stg_box_iou_is_the_formula() -> None:
    """Boxes that overlap, touch, nest, lie apart, are empty or reversed, in whole pixels and
    fractions, with signed zeros, infinities and NaN."""
    rng = random.Random(13)
    odd = [0.0, -0.0, 1e-7, math.inf, -math.inf, math.nan, 5.0, 100.0]

    def box() -> list[float]:
        x0, y0 = rng.choice([rng.randint(0, 50), rng.uniform(0, 50)]), rng.uniform(0, 50)
        out = [x0, y0, x0 + rng.uniform(-10, 40), y0 + rng.choice([0, rng.uniform(-10, 40)])]
        if rng.random() < 0.15:
            out[rng.randrange(4)] = rng.choice(odd)
        return out

    for _ in range(40_000):
        a, b = box(), box()
        assert _same(stg.box_iou(a, b), plain_box_iou(a, b)), (a, b)
