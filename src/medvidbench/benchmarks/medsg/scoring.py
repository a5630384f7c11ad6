"""MedSG-Bench scoring: answer parsers, IoU and per-task aggregation (spec: medsg.md §5-§8, §11).

``official`` reproduces the official evaluation script bit for bit, quirks included:

- :func:`parse_strong` is the Qwen2.5-VL / MedSeq-Grounder path (§5): a pair layout of unsigned
  numbers found with backtracking (so a truncated ``[161, 346, 187,`` splits ``346``), else four
  numbers separated by spaces or commas (the only place a minus sign survives), else the silent
  fallback ``[0.0, 0.0, 0.0, 0.0]``;
- :func:`parse_old` is every other model family's path (§6): six patterns in priority order,
  each box rescaled from 0-1000 or 0-1 by its largest value, ``[]`` when nothing matches;
- :func:`official_iou` is the official IoU (§7), which raises ``ZeroDivisionError`` when both
  boxes have zero area; :func:`score_iou` scores that case 0 and says so.

``corrected`` (§11, our proposal, never mixed with official numbers) keeps signs, never splits a
number, accepts full-width parentheses and any whitespace between four numbers, reports an
unreadable answer as unparsed instead of a silent zero box, and rescales only coordinates the
submission declares (``0-1000`` or ``0-1``).

Aggregation (§8) sums the IoUs one by one in test order (as the official counters do), counts
IoU >= t inclusively on the unrounded double, and keeps unparseable items in the denominator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from medvidbench.core import linear_re

Box = list[float]
Parsed = list[Any]  # one box, a list of boxes, [] or the fallback, as the official code returns
Coordinates = Literal["pixel", "0-1000", "0-1"]
THRESHOLDS = (0.3, 0.5, 0.7)
DEFAULT_SIZE = (336, 336)  # every image but multi_view's (§1); multi_view gives its own `size`
FALLBACK: Box = [0.0, 0.0, 0.0, 0.0]

# --- official: the strong parser (§5) ------------------------------------------------------------

_N = r"(\d+\.?\d*)"
_C = r"[,，]"
_STRONG_PAIRS = linear_re.compile(
    rf"\(?\s*{_N}\s*{_C}\s*{_N}\s*\)?\s*{_C}?\s*\(?\s*{_N}\s*{_C}\s*{_N}\s*\)?"
)
_S = r"(-?\d+\.?\d*)"
_B = r"[ ,，]+"
_STRONG_FOUR = linear_re.compile(rf"{_S}{_B}{_S}{_B}{_S}{_B}{_S}")


def _shape(boxes: list[Box]) -> Parsed:
    """One box as a flat list; several as a list of boxes (the official return shape)."""
    return boxes[0] if len(boxes) == 1 else boxes


def parse_strong(text: str) -> Parsed:
    """The official strong parser's return value (never raises).

    Examples:
        >>> parse_strong("<|box_start|>(91,52),(229,258)<|box_end|>")
        [91.0, 52.0, 229.0, 258.0]
        >>> parse_strong("[161, 346, 187,")
        [161.0, 34.0, 6.0, 187.0]
        >>> parse_strong("-10 -20 30 40")
        [-10.0, -20.0, 30.0, 40.0]
        >>> parse_strong("no box")
        [0.0, 0.0, 0.0, 0.0]
    """
    for pattern in (_STRONG_PAIRS, _STRONG_FOUR):
        found = pattern.findall(text)
        if found:
            return _shape([[float(v) for v in groups] for groups in found])
    return list(FALLBACK)


# --- official: the old parser (§6) ---------------------------------------------------------------

_I, _D = r"(\d+)", r"(\d+\.\d+)"
_OLD_PATTERNS = tuple(
    linear_re.compile(p)
    for p in (
        rf"\({_I},\s*{_I}\),\s*\({_I},\s*{_I}\)",
        rf"\[{_D},\s*{_D},\s*{_D},\s*{_D}\]",
        rf"\({_D},{_D}\),\({_D},{_D}\)",
        rf"\({_D},\s*{_D},\s*{_D},\s*{_D}\)",
        rf"\[{_I},\s*{_I},\s*{_I},\s*{_I}\]",
        rf"<box>{_I}\s+{_I}\s+{_I}\s+{_I}</box>",
    )
)


def _rescale(values: Sequence[float], width: float, height: float) -> Box:
    """A box in 0-1000 units when its largest value is over 1, else in 0-1 units, in pixels
    (divide by 1000 first, then multiply: the order decides the last bits)."""
    v1, v2, v3, v4 = values
    if max(values) > 1:
        return [v1 / 1000 * width, v2 / 1000 * height, v3 / 1000 * width, v4 / 1000 * height]
    return [v1 * width, v2 * height, v3 * width, v4 * height]


def parse_old(text: str, width: float, height: float) -> Parsed:
    """The official old parser's return value: the first pattern (in priority order) with a
    match, each box rescaled to ``width`` x ``height``; ``[]`` when none matches.

    Examples:
        >>> parse_old("[0.27, 0.15, 0.68, 0.77]", 336, 336)
        [90.72, 50.4, 228.48000000000002, 258.72]
        >>> parse_old("10 20 30 40", 336, 336)
        []
    """
    for pattern in _OLD_PATTERNS:
        found = pattern.findall(text)
        if found:
            return _shape([_rescale([float(v) for v in g], width, height) for g in found])
    return []


# --- IoU (§7) ------------------------------------------------------------------------------------


def scored_box(parsed: Parsed | None) -> Box | None:
    """The box an answer is scored by: the first of several; None for none or too few numbers."""
    if not parsed:
        return None
    first = parsed[0] if isinstance(parsed[0], list) else parsed
    return [float(v) for v in first[:4]] if len(first) >= 4 else None


def official_iou(gt: Sequence[float], parsed: Parsed | None) -> float:
    """The official IoU, operation for operation; raises ZeroDivisionError on a zero union.

    Examples:
        >>> official_iou([0, 0, 100, 100], [0.0, 0.0, 70.0, 100.0])
        0.7
    """
    box = scored_box(parsed)
    if box is None:
        return 0.0
    g1, g2, g3, g4 = gt
    p1, p2, p3, p4 = box
    xl, yt, xr, yb = max(g1, p1), max(g2, p2), min(g3, p3), min(g4, p4)
    if xr < xl or yb < yt:
        return 0.0
    inter = (xr - xl) * (yb - yt)
    area_g = (g3 - g1) * (g4 - g2)
    area_p = (p3 - p1) * (p4 - p2)
    union = area_g + area_p - inter
    return float(inter / union)


def score_iou(gt: Sequence[float], parsed: Parsed | None) -> tuple[float, bool]:
    """``(IoU, zero_union)``: the official IoU, with a zero union scored 0 instead of a crash."""
    try:
        return official_iou(gt, parsed), False
    except ZeroDivisionError:
        return 0.0, True


# --- corrected (§11) ------------------------------------------------------------------------------

_SIGNED = r"((?<![\w.])[-−+]?\d+\.?\d*(?!\w))"
_CP = r"[,，]"
_OPEN, _CLOSE = r"[(（]", r"[)）]"
_CORRECTED_PAIRS = linear_re.compile(
    rf"{_OPEN}?\s*{_SIGNED}\s*{_CP}\s*{_SIGNED}\s*{_CLOSE}?\s*{_CP}?\s*{_OPEN}?\s*"
    rf"{_SIGNED}\s*{_CP}\s*{_SIGNED}\s*{_CLOSE}?"
)
_CORRECTED_FOUR = linear_re.compile(
    rf"{_SIGNED}[\s,，]+{_SIGNED}[\s,，]+{_SIGNED}[\s,，]+{_SIGNED}"
)


def _number(text: str) -> float:
    return float(text.replace("−", "-"))


def parse_corrected(text: str) -> list[Box]:
    """Every box of an answer under the corrected rules, in text order ([] when unparsed).

    Examples:
        >>> parse_corrected("[161, 346, 187,")
        []
        >>> parse_corrected("(10,-20),(30,40)")
        [[10.0, -20.0, 30.0, 40.0]]
        >>> parse_corrected("10\\t20\\t30\\t40")
        [[10.0, 20.0, 30.0, 40.0]]
    """
    for pattern in (_CORRECTED_PAIRS, _CORRECTED_FOUR):
        found = pattern.findall(text)
        if found:
            return [[_number(v) for v in groups] for groups in found]
    return []


def declared_scale(box: Box, coordinates: Coordinates, size: Sequence[float] | None = None) -> Box:
    """A box in the declared coordinates put in pixels of the target image (``size`` or
    336x336); ``pixel`` boxes are returned as they are. Nothing is guessed from magnitudes."""
    if coordinates == "pixel":
        return box
    width, height = size or DEFAULT_SIZE
    v1, v2, v3, v4 = box
    if coordinates == "0-1000":
        return [v1 / 1000 * width, v2 / 1000 * height, v3 / 1000 * width, v4 / 1000 * height]
    return [v1 * width, v2 * height, v3 * width, v4 * height]


# --- one item, and a task's aggregate (§8) ------------------------------------------------------

ParserName = Literal["strong", "old"]


@dataclass(frozen=True, slots=True)
class ItemScore:
    """One item's outcome.

    Attributes:
        box: The scored box in pixels (None: nothing scorable).
        iou: The IoU counted for the item (0 when unparsed).
        unparsed: The parser found no box (strong: the fallback; old: ``[]``; corrected: none).
        multi_box: The answer held several boxes (the first was scored).
        zero_union: Both boxes had zero area (the official code would crash; scored 0).
        malformed: The scored box is inverted or has zero area (corrected profile's count).
    """

    box: Box | None
    iou: float
    unparsed: bool
    multi_box: bool
    zero_union: bool = False
    malformed: bool = False


def score_official(
    answer: str | Sequence[float],
    gt: Sequence[float],
    parser: ParserName = "strong",
    size: Sequence[float] | None = None,
) -> ItemScore:
    """One item under the official rules: a string is parsed (strong, or old with the item's
    size), an array of 4 numbers is the box itself."""
    if isinstance(answer, str):
        if parser == "strong":
            parsed = parse_strong(answer)
            unparsed = parsed == FALLBACK
        else:
            width, height = size or DEFAULT_SIZE
            parsed = parse_old(answer, width, height)
            unparsed = parsed == []
    else:
        parsed, unparsed = [float(v) for v in answer], False
    iou, zero_union = score_iou(gt, parsed)
    multi = bool(parsed) and isinstance(parsed[0], list)
    return ItemScore(scored_box(parsed), iou, unparsed, multi, zero_union)


def score_corrected(
    answer: str | Sequence[float],
    gt: Sequence[float],
    coordinates: Coordinates = "pixel",
    size: Sequence[float] | None = None,
) -> ItemScore:
    """One item under the corrected rules (declared coordinates, unparsed reported)."""
    boxes = parse_corrected(answer) if isinstance(answer, str) else [[float(v) for v in answer]]
    if not boxes:
        return ItemScore(None, 0.0, True, False)
    box = declared_scale(boxes[0], coordinates, size)
    iou, zero_union = score_iou(gt, box)
    malformed = box[2] <= box[0] or box[3] <= box[1]
    return ItemScore(box, iou, False, len(boxes) > 1, zero_union, malformed)


@dataclass(slots=True)
class TaskTotals:
    """A task's aggregate: the official counters and our fractions (§8, §10)."""

    n: int = 0
    iou_sum: float = 0.0
    hits: dict[float, int] = field(default_factory=lambda: dict.fromkeys(THRESHOLDS, 0))
    n_unparsed: int = 0
    n_multi_box: int = 0
    n_zero_union: int = 0
    n_malformed: int = 0

    def add(self, item: ItemScore) -> None:
        """Count one item, in test order (the sum is sequential, as the official counters)."""
        self.n += 1
        self.iou_sum += item.iou
        for t in THRESHOLDS:
            self.hits[t] += item.iou >= t
        self.n_unparsed += item.unparsed
        self.n_multi_box += item.multi_box
        self.n_zero_union += item.zero_union
        self.n_malformed += item.malformed

    def metrics(self, task: str) -> dict[str, float | None]:
        """``<task>.miou`` and ``<task>.acc_03/05/07`` as unrounded fractions."""
        if not self.n:
            return dict.fromkeys(f"{task}.{k}" for k in ("miou", "acc_03", "acc_05", "acc_07"))
        out: dict[str, float | None] = {f"{task}.miou": self.iou_sum / self.n}
        for t in THRESHOLDS:
            out[f"{task}.acc_{round(t * 10):02d}"] = self.hits[t] / self.n
        return out

    def counters(self, task: str) -> dict[str, dict[str, float | int]]:
        """The official counters record for the task (``AVE_IOU`` is the sum, as upstream)."""
        return {
            task: {
                "IOU@0.7": self.hits[0.7],
                "IOU@0.5": self.hits[0.5],
                "IOU@0.3": self.hits[0.3],
                "AVE_IOU": self.iou_sum,
                "TOTAL": self.n,
            }
        }
