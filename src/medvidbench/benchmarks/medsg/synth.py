"""A synthetic MedSG-Bench: a test set in the official layout, and predictions of model archetypes
in the answer styles real models write. Nothing in it is real data; the boxes are random.

Images are 336x336 except ``multi_view``'s, which carry their own ``size``; image paths are
placeholders (the evaluator never opens images). The published test set has 9,630 items, 1,482
of them ``referring``; the other tasks share the rest evenly here (their real counts are an open
item of the specification).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import msgspec

from medvidbench.benchmarks.medsg import ARCHETYPES
from medvidbench.benchmarks.medsg.scoring import official_iou, parse_strong
from medvidbench.benchmarks.medsg.testset import TASKS
from medvidbench.core.errors import UsageError

TOTAL, REFERRING = 9630, 1482

# The Qwen family's format suffix, as the official script appends it (its typo included).
QWEN_SUFFIX = (
    "Format: <|box_start|>(x1,y1),(x2,y2)<|box_start|>. Strictly follow this format. "
    "Output only the coordinates. No additional text or explanation."
)
STRUCTURES = ("Spleen", "Liver", "Left kidney", "Lesion", "Polyp", "Tumour", "Stomach", "Aorta")
ORDINALS = ("second", "third")


def _counts(samples: int) -> dict[str, int]:
    if samples < len(TASKS):
        raise UsageError(f"a synthetic MedSG-Bench needs at least {len(TASKS)} items")
    referring = max(1, round(samples * REFERRING / TOTAL))
    rest = samples - referring
    share, extra = divmod(rest, len(TASKS) - 1)
    counts = {t: share + (i < extra) for i, t in enumerate(TASKS[:-1])}
    counts["referring"] = referring
    return counts


def _box(rng: random.Random, width: int, height: int) -> list[int]:
    w, h = rng.randint(12, width // 3), rng.randint(12, height // 3)
    x1, y1 = rng.randint(0, width - w - 1), rng.randint(0, height - h - 1)
    return [x1, y1, x1 + w, y1 + h]


def _tokens(box: list[int]) -> str:
    return f"<|box_start|>({box[0]},{box[1]}),({box[2]},{box[3]})<|box_end|>"


def _question(rng: random.Random, task: str, width: int, height: int) -> tuple[str, int]:
    """A question in the style of the task (our wording) and how many images it has."""
    if task == "referring":
        name = rng.choice(STRUCTURES)
        return (
            "Please find the bounding box coordinates for the area described by: "
            f"<|object_ref_start|>{name}<|object_ref_end|>.",
            3,
        )
    reference = _tokens(_box(rng, width, height))
    ordinal = rng.choice(ORDINALS)
    text = {
        "Registered_Diff": "The two images are registered. Give the bounding box of the region "
        "that differs between them.",
        "Non_Registered_Diff": "The two images are not aligned. Give the bounding box, in the "
        "second image, of the region that differs between them.",
        "multi_view": f"The first view shows the region {reference}. Give its bounding box in "
        f"the {ordinal} view.",
        "object_tracking": f"The object is at {reference} in the first frame. Give its bounding "
        "box in the last frame.",
        "concept": f"The first image marks a structure at {reference}. Give the bounding box of "
        "the structure of the same kind in the second image.",
        "patch": "The crops after the first image come from it. Give the bounding box of the "
        "area the last crop comes from.",
        "crossmodal": f"The first image marks {reference}. Give the bounding box of the same "
        f"region in the {ordinal} image, of another modality.",
    }[task]
    return text, 3 if task in ("multi_view", "patch", "referring") else 2


def generate_ground_truth(samples: int = TOTAL, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    records = []
    for task, count in _counts(samples).items():
        for n in range(count):
            size = (
                [rng.choice((512, 640)), rng.choice((400, 480))] if task == "multi_view" else None
            )
            width, height = size or (336, 336)
            question, images = _question(rng, task, width, height)
            record: dict[str, Any] = {
                "task": task,
                "images": [f"MedSG-Bench/synthetic/{task}/{n:05d}_{i}.png" for i in range(images)],
                "question": question,
                "answer": _box(rng, width, height),
            }
            if size:
                record["size"] = size
            records.append(record)
    return records


def _answer(rng: random.Random, archetype: str, box: list[int], size: tuple[int, int]) -> str:
    jitter = [v + rng.randint(-10, 10) for v in box]
    if archetype == "perfect":
        return _tokens(box)
    if archetype in ("strong", "partial"):
        return _tokens(jitter)
    if archetype == "qwen-json":
        boxes = [jitter] if rng.random() < 0.8 else [[v // 2 for v in box], jitter]
        inner = ",\n\t".join(f'{{"bbox_2d": {b}, "label": "target"}}' for b in boxes)
        return f"```json\n[\n\t{inner}\n]\n```"
    if archetype == "scaled-1000":
        width, height = size
        scaled = [round(v / (width if i % 2 == 0 else height) * 1000) for i, v in enumerate(jitter)]
        return str(scaled)
    if archetype == "scaled-0-1":
        width, height = size
        unit = [v / (width if i % 2 == 0 else height) for i, v in enumerate(jitter)]
        return "[" + ", ".join(f"{v:.2f}" for v in unit) + "]"
    if archetype == "truncated":
        return f"[{jitter[0]}, {jitter[1]}, {jitter[2]}," if rng.random() < 0.5 else str(jitter)
    if rng.random() < 0.9:  # prose
        return "The structure is in the upper left part of the image, near the border."
    return _tokens(jitter)


def generate_predictions(
    gt: list[dict[str, Any]], archetype: str, seed: int = 0
) -> list[dict[str, Any]]:
    """Predictions by key (task, index, prediction) of one archetype."""
    if archetype not in ARCHETYPES:
        raise UsageError(
            f"unknown archetype {archetype!r}; expected one of {', '.join(ARCHETYPES)}"
        )
    rng = random.Random(f"{seed}-{archetype}")
    seen: dict[str, int] = {}
    out = []
    for rec in gt:
        k = seen.get(rec["task"], 0)
        seen[rec["task"]] = k + 1
        if archetype == "partial" and rec["task"] not in TASKS[:4]:
            continue
        size = tuple(rec.get("size") or (336, 336))
        text = _answer(rng, archetype, rec["answer"], size)
        out.append({"task": rec["task"], "index": k, "prediction": text})
    return out


def results_file(gt: list[dict[str, Any]], predictions: list[dict[str, Any]]) -> list[Any]:
    """What the official script writes for these predictions (Qwen path): item records in
    test order, then one counters record per task."""
    by_key = {(p["task"], p["index"]): p["prediction"] for p in predictions}
    seen: dict[str, int] = {}
    records: list[Any] = []
    counters: dict[str, dict[str, float | int]] = {}
    for rec in gt:
        task = rec["task"]
        k = seen.get(task, 0)
        seen[task] = k + 1
        answer = by_key[(task, k)]
        parsed = parse_strong(answer)
        iou = official_iou(rec["answer"], parsed)
        records.append(
            {
                "task": task,
                "question": rec["question"] + QWEN_SUFFIX,
                "answer": answer,
                "filter_answer": parsed,
                "iou": iou,
                "groundtruth": rec["answer"],
            }
        )
        c = counters.setdefault(
            task, {"IOU@0.7": 0, "IOU@0.5": 0, "IOU@0.3": 0, "AVE_IOU": 0.0, "TOTAL": 0}
        )
        for t in (0.7, 0.5, 0.3):
            c[f"IOU@{t}"] += iou >= t
        c["AVE_IOU"] += iou
        c["TOTAL"] += 1
    return records + [{task: c} for task, c in counters.items()]


def write_synthetic(
    out_dir: str | Path, samples: int | None = None, seed: int = 0
) -> dict[str, Path]:
    """``ground_truth.json``, ``predictions_<archetype>.json`` per archetype, and
    ``results_strong.json`` (the strong archetype as the official script's results file)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    gt = generate_ground_truth(TOTAL if samples is None else samples, seed)
    written = {"ground_truth": out / "ground_truth.json"}
    written["ground_truth"].write_text(json.dumps(gt), encoding="utf-8")
    for archetype in ARCHETYPES:
        predictions = generate_predictions(gt, archetype, seed)
        path = out / f"predictions_{archetype}.json"
        path.write_text(json.dumps(predictions), encoding="utf-8")
        written[archetype] = path
        if archetype == "strong":
            written["results_strong"] = out / "results_strong.json"
            # json.dumps(indent=4, ensure_ascii=False)'s text, byte for byte, five times faster
            results = msgspec.json.encode(results_file(gt, predictions))
            written["results_strong"].write_bytes(msgspec.json.format(results, indent=4))
    return written
