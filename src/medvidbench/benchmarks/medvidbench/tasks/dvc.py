"""Dense video captioning, temporal part: DVC_F1 (metrics.md §3.4.1-3.4.2).

``leaderboard-v1``: events are read with upstream's regex (``a-b seconds: caption``, no spaces
around the hyphen, one event per line; bullets or several events on a line collapse into one
segment), overlapping predictions are flattened at every boundary, and both sides are truncated
to whole frames (``int(seconds * fps)``). Per sample, precision and recall count segments
covered at tIoU > θ (many-to-many, Vid2Seq's IoU with its 1e-8), averaged over θ in
{0.3, 0.5, 0.7}; F1 of those means. Samples with no parsed event are left out of their
dataset's mean but counted in its weight: DVC_F1 = Σ_d count_d · mean_d / Σ_d count_d.

``strict-v2``: en-dashes, spaced hyphens, ``s``/``second(s)``, bullets and several events per
line are read; seconds are used as they are, without flattening; every sample counts (no event
parsed = F1 0) and DVC_F1 is the plain mean over samples.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

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
    mean_or_none,
)

if TYPE_CHECKING:
    from medvidbench.core.statistics import Linearised

Event = tuple[float, float, str]
THRESHOLDS = (0.3, 0.5, 0.7)
_NUM = r"(\d+(?:\.\d+)?)"
# upstream's event pattern, _NUM-_NUM\s+seconds?:\s+(.*?)(?=\n<number>-<number>\s+seconds?:|\Z)
# under DOTALL, read a header and its caption at a time (the same matches, about 3x sooner)
_V1_EVENT = linear_re.Sections(
    _NUM + "-" + _NUM + r"\s+seconds?:\s+", r"\n\d+(?:\.\d+)?-\d+(?:\.\d+)?\s+seconds?:"
)
_V1_LINE = linear_re.compile(
    _NUM + r"\s*[-–]\s*" + _NUM + r"\s*seconds?.*?(?:-|\*\*Description:\*\*)\s*(.+)"
)
_V2_HEADER = linear_re.compile(
    _NUM + r"\s*(?:seconds?|secs?|s)?\s*(?:-|–|—|to)\s*" + _NUM + r"\s*(?:seconds?|secs?|s)\s*:?",
    re.IGNORECASE,
)


def parse(text: str, strict: bool = False) -> list[Event]:
    """Read ``(start, end, caption)`` events (seconds) from an answer; never raises.

    Examples:
        >>> parse("0.0-10.0 seconds: a\\n10.0-15.0 seconds: b")
        [(0.0, 10.0, 'a'), (10.0, 15.0, 'b')]
        >>> parse("0.0-10.0 seconds: a 10.0-20.0 seconds: b")
        [(0.0, 10.0, 'a 10.0-20.0 seconds: b')]
        >>> parse("- 0.0 - 10.0 s: a - 10.0–20.0 seconds: b", strict=True)
        [(0.0, 10.0, 'a'), (10.0, 20.0, 'b')]
    """
    found = _parse_v2(text) if strict else _parse_v1(text)
    seen: set[tuple[float, float]] = set()
    out = []
    for start, end, caption in found:
        if (start, end) not in seen:
            seen.add((start, end))
            out.append((start, end, caption))
    return out


def reads_something(text: str) -> bool:
    """``bool(parse(text))`` under ``leaderboard-v1``, without building the events."""
    if _V1_EVENT.search(text) is not None:
        return True
    return any(_V1_LINE.search(line) is not None for line in text.splitlines())


def _parse_v1(text: str) -> list[Event]:
    found = [
        (float(a), float(b), c.replace("\n", " ").strip()) for a, b, c in _V1_EVENT.findall(text)
    ]
    if found:
        return found
    for line in text.splitlines():
        m = _V1_LINE.search(line)
        if m:
            found.append((float(m.group(1)), float(m.group(2)), m.group(3).strip()))
    return found


def _parse_v2(text: str) -> list[Event]:
    headers = list(_V2_HEADER.finditer(text))
    ends = [m.start() for m in headers[1:]] + [len(text)] if headers else []
    out = []
    for m, end in zip(headers, ends, strict=True):
        caption = text[m.end() : end]
        caption = " ".join(caption.replace("**", " ").split()).strip(" -*•:")
        out.append((float(m.group(1)), float(m.group(2)), caption))
    return out


def truth(struc: Any) -> list[Event]:
    """GT events from ``[[...]]``, ``[{dc_segments: [...]}]`` or ``[{...}, ...]``; uncaptioned
    segments are dropped, as upstream does."""
    if isinstance(struc, list) and struc and isinstance(struc[0], list):
        items = struc[0]
    elif (
        isinstance(struc, list)
        and struc
        and isinstance(struc[0], dict)
        and "dc_segments" in struc[0]
    ):
        items = struc[0]["dc_segments"]
    else:
        items = struc if isinstance(struc, list) else []
    return [
        (float(s["start"]), float(s["end"]), str(s["caption"]))
        for s in items
        if isinstance(s, dict) and s.get("caption") is not None
    ]


def flatten(events: list[Event]) -> list[Event]:
    """Cut overlapping events at every boundary; each piece takes its longest cover's caption."""
    events = sorted(events, key=lambda e: (e[0], e[1]))
    if all(b[0] >= a[1] for a, b in pairwise(events)):
        return events
    bounds = sorted({t for e in events for t in e[:2]})
    out = []
    for lo, hi in pairwise(bounds):
        covers = [e for e in events if e[0] <= lo and e[1] >= hi]
        if covers:
            longest = max(covers, key=lambda e: e[1] - e[0])
            out.append((lo, hi, longest[2]))
    return out


def tiou(a: tuple[float, float], b: tuple[float, float], eps: float = 1e-8) -> float:
    """Vid2Seq's segment IoU: intersection / (min(hull, len a + len b) + eps)."""
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = min(max(a[1], b[1]) - min(a[0], b[0]), (a[1] - a[0]) + (b[1] - b[0]))
    return inter / (union + eps)


def f1(gt: Sequence[tuple[float, float]], pred: Sequence[tuple[float, float]]) -> float:
    """F1 of precision and recall averaged over θ in {0.3, 0.5, 0.7} (coverage at IoU > θ).

    A segment is covered at θ when some tIoU with the other side exceeds θ, that is when its
    best tIoU does (NaN, from infinite times, is never best: it exceeds nothing); each best is
    found once for all three thresholds, with :func:`tiou` written out inline (the same
    operations, comparisons picking what min and max pick).
    """
    row_best = [-math.inf] * len(pred)
    col_best = [-math.inf] * len(gt)
    for i, (a0, a1) in enumerate(pred):
        best = -math.inf
        for j, (b0, b1) in enumerate(gt):
            inter = (b1 if b1 < a1 else a1) - (b0 if b0 > a0 else a0)
            hull = (b1 if b1 > a1 else a1) - (b0 if b0 < a0 else a0)
            lengths = (a1 - a0) + (b1 - b0)
            v = (inter if inter > 0.0 else 0.0) / ((lengths if lengths < hull else hull) + 1e-8)
            if v > best:
                best = v
            if v > col_best[j]:
                col_best[j] = v
        row_best[i] = best
    # How many bests exceed each θ, counted in the sorted bests (none is NaN: see above).
    row_best.sort()
    col_best.sort()
    precisions, recalls = [], []
    for theta in THRESHOLDS:
        precisions.append((len(pred) - bisect_right(row_best, theta)) / max(len(pred), 1))
        recalls.append((len(gt) - bisect_right(col_best, theta)) / len(gt))
    p, r = sum(precisions) / 3, sum(recalls) / 3
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def score(gt: list[Event], pred: list[Event], fps: float, strict: bool) -> float | None:
    """Per-sample F1, or None when v1 leaves the sample out (no event parsed, no GT event)."""
    if not gt:
        return None
    if not pred:
        return 0.0 if strict else None
    if strict:
        return f1([(a, b) for a, b, _ in gt], [(a, b) for a, b, _ in pred])
    frames = [(int(a * fps), int(b * fps)) for a, b, _ in flatten(pred)]
    return f1([(int(a * fps), int(b * fps)) for a, b, _ in gt], frames)


class DVCScorer(TaskScorer[Sample]):
    task = "dense_captioning"
    metric_keys: tuple[str, ...] = ("dvc_f1",)

    def parse(self, text: str, item: Sample, profile: Profile) -> list[Event]:
        return parse(text, tolerant(profile))

    def score_sample(self, parsed: list[Event], item: Sample, profile: Profile) -> SampleResult:
        value = score(truth(item.structure()), parsed, item.fps, corrected(profile))
        note = "" if value is not None else "no event parsed" if parsed == [] else "no GT event"
        return SampleResult(
            item.index,
            item.dataset,
            bool(parsed),
            None if value is None else {"dvc_f1": value},
            note,
        )

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        per_dataset: dict[str, dict[str, float | int | None]] = {}
        for d, rs in group_by_dataset(results).items():
            mean = mean_or_none([r.values["dvc_f1"] for r in rs if r.values is not None])
            per_dataset[d] = {
                "dvc_f1": mean,
                "count": len(rs),
                "evaluated": sum(r.values is not None for r in rs),
            }
        if corrected(profile):
            overall = mean_or_none([r.values["dvc_f1"] for r in results if r.values is not None])
        else:  # count-weighted per-dataset means; a dataset with nothing parsed enters as 0
            total = sum(int(v["count"] or 0) for v in per_dataset.values())
            overall = (
                sum(float(v["dvc_f1"] or 0.0) * int(v["count"] or 0) for v in per_dataset.values())
                / total
                if total
                else None
            )
        return TaskResult(
            self.task, {"dvc_f1": overall}, per_dataset, diagnostics(results), results
        )

    def linearise(self, results: list[SampleResult], profile: Profile) -> Linearised:
        """strict-v2: the sample mean. v1: per-dataset means weighted by the datasets' shares of
        the samples, a dataset with nothing evaluated entering as 0."""
        if corrected(profile):
            return super().linearise(results, profile)
        from medvidbench.core.statistics import Linearised, Ratio

        out = Linearised()
        counts: dict[str, int] = {}
        evaluated: dict[str, int] = {}
        for r in results:
            counts[r.dataset] = counts.get(r.dataset, 0) + 1
            feats = {f"dvc_f1/{r.dataset}/#samples": 1.0, "dvc_f1/#samples": 1.0}
            if r.values is not None:
                evaluated[r.dataset] = evaluated.get(r.dataset, 0) + 1
                feats[f"dvc_f1/{r.dataset}"] = r.values["dvc_f1"]
                feats[f"dvc_f1/{r.dataset}#n"] = 1.0
            out.rows.append((r.index, feats))
        out.formulas["dvc_f1"] = [
            Ratio(
                f"dvc_f1/{d}",
                f"dvc_f1/{d}#n",
                1.0,
                (f"dvc_f1/{d}/#samples", "dvc_f1/#samples"),
                present=f"dvc_f1/{d}/#samples",  # drawn, nothing evaluated: 0
            )
            if evaluated.get(d)
            else Ratio(
                "dvc_f1/#zero",
                f"dvc_f1/{d}/#samples",
                1.0,
                (f"dvc_f1/{d}/#samples", "dvc_f1/#samples"),
            )
            for d in sorted(counts)
        ]
        return out


SCORER = DVCScorer()
