"""Temporal action localisation: TAG_mIoU@0.3 and TAG_mIoU@0.5 (metrics.md §3.1).

``leaderboard-v1``: every "a-b" number pair is a segment (hyphen only), else a "from a to b"
fallback; GT segments are matched greedily in stored order to the unused prediction of highest
IoU, a match counting when IoU >= θ; a sample's score is the mean IoU of its matched pairs, or 0.
Unmatched GT segments and extra predictions cost nothing (bug B9).

``strict-v2``: en-dashes, spaced hyphens and ``s``/``second(s)`` units are read too; one optimal
one-to-one assignment maximises total IoU, and a sample scores
Σ IoU(pairs with IoU >= θ) / (|GT| + |pred| - #those pairs), a set-level Jaccard that charges
both missed and hallucinated segments and never rises with θ. For one GT segment and one
prediction both profiles give IoU·1[IoU >= θ].
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from medvidbench.benchmarks.medvidbench.groundtruth import Sample
from medvidbench.benchmarks.medvidbench.rules import corrected, tolerant
from medvidbench.core import linear_re
from medvidbench.core.benchmark import Profile
from medvidbench.core.scoring import (
    SampleResult,
    TaskResult,
    TaskScorer,
    diagnostics,
    group_by_dataset,
    micro_mean,
)

Segment = tuple[float, float]
THRESHOLDS = (0.3, 0.5)
# Each threshold's metric and recall names (made once: formatting them per sample was a tenth of
# TAL's scoring time).
_NAMES = {t: (f"tag_miou_{round(t * 10):02d}", f"recall_{round(t * 10):02d}") for t in THRESHOLDS}
_NUM = r"(\d+(?:\.\d+)?)"
_V1_PAIR = linear_re.compile(_NUM + r"\s*-\s*" + _NUM)
_V1_TO = linear_re.compile(
    r"(?:from|is from|takes place from)?\s*"
    + _NUM
    + r"(?:s| seconds?)?\s*to\s*"
    + _NUM
    + r"(?:s| seconds?)?",
    re.IGNORECASE,
)
_HMS_TO = linear_re.compile(r"(\d{1,2}):(\d{2}):(\d{2})\s*to\s*(\d{1,2}):(\d{2}):(\d{2})")
_V2_PAIR = linear_re.compile(
    _NUM + r"\s*(?:seconds?|secs?|s)?\s*(?:-|–|—|to)\s*" + _NUM, re.IGNORECASE
)


def parse(text: str, strict: bool = False) -> list[Segment]:
    """Read the predicted segments (seconds) from an answer; never raises.

    Examples:
        >>> parse("22.0-78.0, 89.0-94.0 seconds.")
        [(22.0, 78.0), (89.0, 94.0)]
        >>> parse("1.1–3.0 seconds.")
        []
        >>> parse("1.1–3.0 seconds.", strict=True)
        [(1.1, 3.0)]
        >>> parse("It takes place from 12.1 to 117.0 seconds")
        [(12.1, 117.0)]
    """
    if strict:
        return [(float(a), float(b)) for a, b in _V2_PAIR.findall(text)]
    found = [(float(a), float(b)) for a, b in _V1_PAIR.findall(text)]
    if found:
        return found
    found = [(round(float(a), 2), round(float(b), 2)) for a, b in _V1_TO.findall(text)]
    for h1, m1, s1, h2, m2, s2 in _HMS_TO.findall(text):
        found.append(
            (int(h1) * 3600 + int(m1) * 60 + float(s1), int(h2) * 3600 + int(m2) * 60 + float(s2))
        )
    return found


def reads_something(text: str) -> bool:
    """``bool(parse(text))`` under ``leaderboard-v1``, without building the segments."""
    return any(p.search(text) is not None for p in (_V1_PAIR, _V1_TO, _HMS_TO))


def truth(struc: Any) -> list[Segment]:
    """All spans of all actions in ``struc_info`` (a list of ``{spans: [...]}`` or one dict)."""
    items = struc if isinstance(struc, list) else [struc]
    return [
        (float(s["start"]), float(s["end"]))
        for item in items
        if isinstance(item, dict)
        for s in item.get("spans", [])
    ]


def iou(a: Segment, b: Segment) -> float:
    """Intersection over the hull, upstream's form (equal to the union when they overlap):
    ``max(0, min(a1, b1) - max(a0, b0)) / (max(a1, b1) - min(a0, b0))``, 0 for an empty hull.
    Written with comparisons in place of min and max (a fifth of TAL's scoring time), each
    picking the operand the builtin picks, so the value is the same to the last bit."""
    a0, a1 = a
    b0, b1 = b
    union = (b1 if b1 > a1 else a1) - (b0 if b0 < a0 else a0)
    if union <= 0:
        return 0.0
    inter = (b1 if b1 < a1 else a1) - (b0 if b0 > a0 else a0)
    return (inter if inter > 0.0 else 0.0) / union


def greedy_matches(gt: Sequence[Segment], pred: Sequence[Segment], theta: float) -> list[float]:
    """v1: GT in stored order takes the unused prediction of highest IoU if it is >= θ.

    Returns the IoUs of the matched pairs.
    """
    return _greedy([[iou(g, p) for p in pred] for g in gt], theta)


def _greedy(table: Sequence[Sequence[float]], theta: float) -> list[float]:
    """:func:`greedy_matches` on the IoU table (``table[i][j]``: GT i, prediction j)."""
    used: set[int] = set()
    matched: list[float] = []
    for row in table:
        best, best_j = 0.0, -1
        for j, v in enumerate(row):
            if v > best and j not in used:
                best, best_j = v, j
        if best_j >= 0 and best >= theta:
            used.add(best_j)
            matched.append(best)
    return matched


def assign(table: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """A one-to-one assignment of rows to columns maximising the total of positive entries.

    Exact at every size (the Hungarian-type solver of ``scipy.optimize.linear_sum_assignment``);
    pairs whose entry is not positive are not pairs. scipy is imported here, not at module
    import, so that a run that never needs an assignment does not pay for it.

    Examples:
        >>> assign([[0.4, 0.5], [0.0, 0.45]])
        [(0, 0), (1, 1)]
    """
    if not table or not table[0]:
        return []
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    values = np.asarray(table, dtype=np.float64)
    rows, cols = linear_sum_assignment(np.where(values > 0, values, 0.0), maximize=True)
    return [(int(i), int(j)) for i, j in zip(rows, cols, strict=True) if values[i, j] > 0]


def optimal_pairs(gt: Sequence[Segment], pred: Sequence[Segment]) -> list[float]:
    """IoUs of the one-to-one assignment of GT to predicted segments maximising total IoU."""
    table = [[iou(g, p) for p in pred] for g in gt]
    return [table[i][j] for i, j in assign(table)]


def jaccard_at(
    gt: Sequence[Segment], pred: Sequence[Segment], pairs: list[float], theta: float
) -> float:
    """v2: Σ matched IoU >= θ over |GT| + |pred| - #matched."""
    hits = [v for v in pairs if v >= theta]
    denominator = len(gt) + len(pred) - len(hits)
    return sum(hits) / denominator if denominator else 0.0


def score(
    gt: Sequence[Segment], pred: Sequence[Segment], fps: float, strict: bool
) -> dict[str, float]:
    """Per-sample numbers: ``tag_miou_03``, ``tag_miou_05`` and recall at both thresholds."""
    if strict:
        pairs = optimal_pairs(gt, pred)
        out = {_NAMES[t][0]: jaccard_at(gt, pred, pairs, t) for t in THRESHOLDS}
        for t in THRESHOLDS:
            out[_NAMES[t][1]] = sum(v >= t for v in pairs) / len(gt) if gt else 0.0
        return out
    g = [(a * fps, b * fps) for a, b in gt]  # upstream converts to frames; kept for float parity
    p = [(a * fps, b * fps) for a, b in pred]
    table = [[iou(a, b) for b in p] for a in g]  # the same for every threshold
    out = {}
    for t in THRESHOLDS:
        matched = _greedy(table, t)
        miou, recall = _NAMES[t]
        out[miou] = sum(matched) / len(matched) if matched else 0.0
        out[recall] = len(matched) / len(g) if g else 0.0
    return out


def aggregate(results: Sequence[SampleResult]) -> dict[str, float | None]:
    """Pooled per-sample means over all TAL samples (every TAL sample counts)."""
    keys = [_NAMES[t][0] for t in THRESHOLDS] + [_NAMES[t][1] for t in THRESHOLDS]
    return {k: micro_mean(results, k) for k in keys}


class TALScorer(TaskScorer[Sample]):
    task = "tal"
    metric_keys: tuple[str, ...] = ("tag_miou_03", "tag_miou_05")

    def parse(self, text: str, item: Sample, profile: Profile) -> list[Segment]:
        return parse(text, tolerant(profile))

    def score_sample(self, parsed: list[Segment], item: Sample, profile: Profile) -> SampleResult:
        values = score(truth(item.structure()), parsed, item.fps, corrected(profile))
        return SampleResult(item.index, item.dataset, bool(parsed), values)

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        overall = aggregate(results)
        per_dataset: dict[str, dict[str, float | int | None]] = {
            d: {
                **{k: v for k, v in aggregate(rs).items() if k in self.metric_keys},
                "count": len(rs),
            }
            for d, rs in group_by_dataset(results).items()
        }
        diag = diagnostics(results)
        diag.update({k: v for k, v in overall.items() if k.startswith("recall")})
        metrics = {k: overall[k] for k in self.metric_keys}
        return TaskResult(self.task, metrics, per_dataset, diag, results)


SCORER = TALScorer()
