"""MedSG-Bench's eight grounding tasks as training rewards (docs/rewards.md).

The raw reward of a completion is its box's IoU with the ground truth under the ``corrected``
profile (an unreadable answer is 0), gated by format (the answer held a box). A training row's
ground truth is the item (``encode``/``decode``). The mean raw reward over a task's items is the
task's corrected mean IoU; its Acc@t columns are the means of thresholded IoUs, not of the
reward.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from typing import Any

import msgspec

from medvidbench.benchmarks.medsg.testset import TASKS, Item
from medvidbench.core.rewards import RewardSpec, TaskReward
from medvidbench.core.scoring import SampleResult


class RewardItem(msgspec.Struct, forbid_unknown_fields=True):
    """A training row's ground-truth column (JSON)."""

    task: str
    question: str
    images: list[str]
    answer: tuple[float, float, float, float]
    size: tuple[float, float] | None = None
    id: str = ""


def encode(item: Item, extras: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "task": item.task,
        "question": item.question,
        "images": list(item.images),
        "answer": list(item.answer),
        "id": item.sample_id,
    }
    if item.size is not None:
        out["size"] = list(item.size)
    return out


def decode(data: Mapping[str, Any]) -> tuple[Item, dict[str, Any]]:
    try:
        rec = msgspec.convert(data, RewardItem)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc)) from None
    if rec.task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {rec.task!r}")
    if not all(math.isfinite(v) for v in rec.answer):
        raise ValueError("answer must be 4 finite numbers")
    if rec.size is not None and not (all(math.isfinite(v) for v in rec.size) and min(rec.size) > 0):
        raise ValueError("size must be 2 positive numbers")
    # the item's place among its task's items, from its id "<task>#<k>" (0 for another id)
    task, _, k = rec.id.rpartition("#")
    place = int(k) if task == rec.task and k.isdigit() and k.isascii() else 0
    item = Item(0, rec.id, rec.task, place, rec.question, tuple(rec.images), rec.answer, rec.size)
    return item, {}


def prompt(item: Item) -> dict[str, Any]:
    return {"question": item.question, "media": {"images": list(item.images)}}


def visuals(item: Item, record: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The item's images, as the test file names them."""
    return {"images": list(item.images), "videos": []}


def _iou_of(task: str) -> Any:
    key = f"{task}.miou"

    def score(r: SampleResult) -> float:
        return float((r.values or {}).get(key, 0.0))

    return score


@cache
def spec() -> RewardSpec[Item]:
    return RewardSpec(
        profile="corrected",
        tasks={
            t: TaskReward(
                t,
                _iou_of(t),
                gated=True,
                about="IoU of the answer's first box with the GT box",
                mean_of=(f"{t}.miou",),
            )
            for t in TASKS
        },
        encode_item=encode,
        decode_item=decode,
        prompt=prompt,
        visuals=visuals,
    )
