"""Spatiotemporal grounding: STG_mIoU (metrics.md §3.2).

``leaderboard-v1``: boxes are read from ``<t> seconds: [x1, y1, x2, y2]`` (plural "seconds:" and
a space before it), else from ``[[..]]`` integer boxes zipped onto the GT keys; a malformed box
repeats the last valid one or is dropped. Each GT time key is looked up as ``"%.1f"`` (so
"2.25" becomes "2.2", bug B13); a missing box repeats the previous timestamp's box, except at
the first key. The sample's IoU is the mean per-timestamp box IoU; samples with an empty GT are
skipped.

``strict-v2``: ``second``/``seconds``/``s`` in any case, with or without a space; times are
matched by value (to the millisecond); a missing, malformed or degenerate box scores 0 at its
timestamp (no carry-forward); the list form is read with decimals too.
"""

from __future__ import annotations

import math
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

Box = list[float]
_V1_ENTRY = linear_re.compile(r"(\d+(?:\.\d+)?)\s+seconds:\s*\[([^\]]+)\]")
_V1_LIST = linear_re.compile(r"\[\[([\d\s,]+)\]\]")
_V2_ENTRY = linear_re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:seconds?|secs?|s)\s*:\s*\[+([^\]]+)\]", re.IGNORECASE
)
_V2_LIST = linear_re.compile(r"\[\s*(-?\d+(?:\.\d+)?(?:\s*,\s*-?\d+(?:\.\d+)?){3})\s*\]")
_ZERO: Box = [0.0, 0.0, 0.0, 0.0]


def _box(content: str) -> Box | None:
    """strict-v2: four comma-separated numbers, brackets around any of them ignored."""
    parts = [p.strip().strip("[]").strip() for p in content.split(",")]
    if len(parts) != 4:
        return None
    try:
        return [float(p) for p in parts]
    except ValueError:
        return None


def _v1_box(content: str) -> Box | None:
    """leaderboard-v1, an entry's box: four comma-separated numbers, each with an opening
    bracket before it or a closing one after it dropped (upstream's ``lstrip``/``rstrip``)."""
    try:
        box = [float(p.strip().lstrip("[").rstrip("]")) for p in content.split(",")]
    except ValueError:
        return None
    return box if len(box) == 4 else None


def _v1_list_box(content: str) -> Box | None:
    """leaderboard-v1, a ``[[...]]`` box: exactly four comma-separated integers; anything else
    (an empty piece, digits split by a space, three or five numbers) drops the box."""
    try:
        box = [int(p.strip()) for p in content.split(",")]
    except ValueError:
        return None
    return [float(v) for v in box] if len(box) == 4 else None


def parse(text: str, gt_keys: Sequence[str], strict: bool = False) -> dict[str, Box]:
    """Read ``{time key: box}`` from an answer; never raises.

    Examples:
        >>> parse("1.0 seconds: [0, 0, 10, 10] 5.0 seconds: [5, 5, 15, 15]", ["1.0", "5.0"])
        {'1.0': [0.0, 0.0, 10.0, 10.0], '5.0': [5.0, 5.0, 15.0, 15.0]}
        >>> parse("1.0 second: [0,0,10,10]", ["1.0"])
        {}
        >>> parse("1.0 second: [0,0,10,10]", ["1.0"], strict=True)
        {'1': [0.0, 0.0, 10.0, 10.0]}
    """
    if strict:
        return _parse_v2(text, gt_keys)
    boxes: dict[str, Box] = {}
    last: Box | None = None
    matches = _V1_ENTRY.findall(text)
    for time, content in matches:
        box = _v1_box(content)
        if box is not None:
            last = box
        elif last is not None:
            box = list(last)
        else:
            continue
        boxes[str(float(time))] = box
    if not matches:
        found = [b for m in _V1_LIST.findall(text) if (b := _v1_list_box(m)) is not None]
        boxes = dict(zip(gt_keys, found, strict=False))
    return boxes


def reads_something(text: str) -> bool:
    """Whether ``leaderboard-v1`` reads a box from ``text`` at any test item's time keys: an
    entry ``<t> seconds: [...]`` with a well-formed box, or, when there is no entry at all, a
    ``[[...]]`` box of four integers (which the parser lays onto the item's keys in order)."""
    matches = _V1_ENTRY.findall(text)
    if matches:
        return any(_v1_box(content) is not None for _, content in matches)
    return any(_v1_list_box(m) is not None for m in _V1_LIST.findall(text))


def _time_key(value: float) -> str:
    """Times matched by value to the millisecond: "1", "1.0" and "1.000" are one key."""
    return f"{round(value, 3):g}"


def _parse_v2(text: str, gt_keys: Sequence[str]) -> dict[str, Box]:
    boxes: dict[str, Box] = {}
    entries = _V2_ENTRY.findall(text)
    for time, content in entries:
        box = _box(content)
        if box is not None:
            boxes.setdefault(_time_key(float(time)), box)
    if not entries:
        found = [_box(m) for m in _V2_LIST.findall(text)]
        for key, box in zip(gt_keys, found, strict=False):
            if box is not None:
                boxes[_time_key(float(key))] = box
    return boxes


def truth(struc: Any) -> dict[str, Box]:
    """The GT ``bbox_dict`` from ``[{bbox_dict: ...}]``, ``{bbox_dict: ...}`` or the dict itself."""
    item = struc[0] if isinstance(struc, list) and struc else struc
    if not isinstance(item, dict):
        return {}
    boxes = item.get("bbox_dict", item)
    return {
        str(k): [float(v) for v in b]
        for k, b in boxes.items()
        if isinstance(b, list) and len(b) == 4
    }


def box_iou(a: Box, b: Box) -> float:
    """Plain xyxy IoU with the union clipped at 1e-6 (upstream's form):
    ``iw = max(0, min(ax1, bx1) - max(ax0, bx0))``, ``ih`` likewise, ``inter = iw * ih``,
    ``inter / max(area a + area b - inter, 1e-6)``. Written with comparisons in place of min
    and max, each picking the operand the builtin picks (NaN included), so the value is the
    same to the last bit (tests/tasks/test_overlaps.py)."""
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    iw = (b2 if b2 < a2 else a2) - (b0 if b0 > a0 else a0)
    ih = (b3 if b3 < a3 else a3) - (b1 if b1 > a1 else a1)
    inter = (iw if iw > 0.0 else 0.0) * (ih if ih > 0.0 else 0.0)
    union = (a2 - a0) * (a3 - a1) + (b2 - b0) * (b3 - b1) - inter
    return inter / (1e-6 if union < 1e-6 else union)


def score(gt: dict[str, Box], pred: dict[str, Box], strict: bool = False) -> float:
    """The sample's mean per-timestamp IoU."""
    ious = []
    previous: Box = _ZERO
    for i, (key, gt_box) in enumerate(gt.items()):
        if strict:
            box = pred.get(_time_key(float(key)))
            valid = (
                box is not None
                and all(map(math.isfinite, box))
                and box[2] > box[0]
                and box[3] > box[1]
            )
            ious.append(box_iou(gt_box, box) if valid and box is not None else 0.0)
            continue
        box = pred.get(f"{float(key):.1f}", _ZERO)
        if box == _ZERO and i > 0:
            box = previous  # carry-forward, never at the first key
        previous = box
        ious.append(box_iou(gt_box, box))
    return sum(ious) / len(ious)


class STGScorer(TaskScorer[Sample]):
    task = "stg"
    metric_keys: tuple[str, ...] = ("stg_miou",)

    def parse(
        self, text: str, item: Sample, profile: Profile
    ) -> tuple[dict[str, Box], dict[str, Box]]:
        """The predicted boxes, read at the ground truth's time keys (with that truth)."""
        gt = truth(item.structure())
        return parse(text, list(gt), tolerant(profile)), gt

    def score_sample(
        self, parsed: tuple[dict[str, Box], dict[str, Box]], item: Sample, profile: Profile
    ) -> SampleResult:
        pred, gt = parsed
        if not gt:
            return SampleResult(
                item.index, item.dataset, bool(pred), None, "ground truth has no boxes"
            )
        value = score(gt, pred, corrected(profile))
        return SampleResult(item.index, item.dataset, bool(pred), {"stg_miou": value})

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        per_dataset: dict[str, dict[str, float | int | None]] = {
            d: {"stg_miou": micro_mean(rs, "stg_miou"), "count": len(rs)}
            for d, rs in group_by_dataset(results).items()
        }
        miou = micro_mean(results, "stg_miou")
        return TaskResult(self.task, {"stg_miou": miou}, per_dataset, diagnostics(results), results)


SCORER = STGScorer()
