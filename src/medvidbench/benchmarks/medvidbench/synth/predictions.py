"""Prediction files for model archetypes, in the prediction-only submission format.

``strong`` and ``weak`` draw answers of two quality levels from the ground truth. ``shuffled``
is ``strong`` in another order and ``partial`` is ``strong`` without three tasks, so both must
score exactly as ``strong`` does on what they contain. ``format-noisy`` renders the very same
answers as ``strong`` in the format variants upstream's parsers reject (metrics.md §7
B13-B18), which isolates what parsing costs. ``garbage`` is what a broken pipeline emits.
"""

from __future__ import annotations

import random
from typing import Any

from medvidbench.benchmarks.medvidbench import ARCHETYPES
from medvidbench.benchmarks.medvidbench.nap_classes import nap_classes
from medvidbench.benchmarks.medvidbench.synth import vocab as V
from medvidbench.benchmarks.medvidbench.tasks.registry import task_for_qa_type

PARTIAL_DROPS = ("video_summary", "region_caption", "skill_assessment")
QUALITY = {"strong": 0.8, "weak": 0.35}

Spans = list[tuple[float, float]]


def _gt_text(rec: dict[str, Any]) -> str:
    return str(rec["conversations"][-1]["value"])


def _sid(rec: dict[str, Any]) -> str:
    m = rec["metadata"]
    return (
        f"{m['video_id']}&&{m['input_video_start_frame']}&&{m['input_video_end_frame']}&&{m['fps']}"
    )


class Answerer:
    """Produces a model's answer content (not yet text) for each ground-truth record."""

    def __init__(self, quality: float, rng: random.Random) -> None:
        self.q, self.rng = quality, rng
        self.nap = nap_classes()

    def content(self, rec: dict[str, Any]) -> tuple[str, Any]:
        task = task_for_qa_type(rec["qa_type"])
        assert task is not None
        return task, getattr(self, task)(rec)

    def jitter_spans(self, spans: Spans, duration: float) -> Spans:
        out = []
        for a, b in spans:
            if self.rng.random() < self.q:
                d = (b - a) * (1 - self.q) * 0.6
                a, b = a + self.rng.uniform(-d, d), b + self.rng.uniform(-d, d)
            else:
                a = self.rng.uniform(0, duration)
                b = a + self.rng.uniform(1, max(2.0, duration / 3))
            a, b = max(0.0, round(a, 1)), round(max(a + 0.5, b), 1)
            out.append((a, b))
        return out

    def tal(self, rec: dict[str, Any]) -> Spans:
        spans = [(s["start"], s["end"]) for item in rec["struc_info"] for s in item["spans"]]
        return self.jitter_spans(spans, max(b for _, b in spans) * 1.5)

    def stg(self, rec: dict[str, Any]) -> dict[str, list[float]]:
        out = {}
        for key, (x1, y1, x2, y2) in rec["struc_info"][0]["bbox_dict"].items():
            w, h = x2 - x1, y2 - y1
            s = (1 - self.q) * 0.8
            if self.rng.random() < (1 - self.q) * 0.3:
                dx, dy = self.rng.uniform(-2, 2) * w, self.rng.uniform(-2, 2) * h
            else:
                dx, dy = self.rng.uniform(-s, s) * w, self.rng.uniform(-s, s) * h
            out[key] = [round(max(0.0, v), 2) for v in (x1 + dx, y1 + dy, x2 + dx, y2 + dy)]
        return out

    def next_action(self, rec: dict[str, Any]) -> str:
        truth = _gt_text(rec)
        if self.rng.random() < self.q * 0.75:
            return truth
        options = next((v for v in self.class_lists() if truth in v), [truth])
        return self.rng.choice(options)

    def class_lists(self) -> list[list[str]]:
        lists = [
            self.nap["AVOS"],
            self.nap["CholecT50"],
            self.nap["CoPESD"],
            self.nap["EgoSurgery_reference_only"],
        ]
        return lists + list(self.nap["NurViD_procedures"].values())

    def dense_captioning(self, rec: dict[str, Any]) -> list[tuple[float, float, str]]:
        struc = rec["struc_info"][0]
        segments = struc["dc_segments"] if isinstance(struc, dict) else struc
        spans = self.jitter_spans([(s["start"], s["end"]) for s in segments], segments[-1]["end"])
        out = []
        for (a, b), seg in zip(spans, segments, strict=True):
            label, _, sentence = seg["caption"].partition(": ")
            if self.rng.random() > self.q:
                sentence = (
                    f"{self.rng.choice(V.ACTORS)} {self.rng.choice(V.VERBS)} "
                    f"{self.rng.choice(V.OBJECTS_NURSING)}."
                )
            out.append((a, b, f"{label}: {sentence}"))
        if self.rng.random() > self.q and len(out) > 1:
            out.pop(self.rng.randrange(len(out)))
        return sorted(out)

    def caption(self, rec: dict[str, Any]) -> str:
        words = _gt_text(rec).split()
        if self.rng.random() < self.q:
            keep = [w for w in words if self.rng.random() < 0.5 + self.q / 2]
            return " ".join(keep)
        return (
            f"{self.rng.choice(V.SURGEONS)} {self.rng.choice(V.VERBS)} "
            f"{self.rng.choice(V.OBJECTS_SURGERY)}."
        )

    video_summary = caption
    region_caption = caption

    def skill_assessment(self, rec: dict[str, Any]) -> dict[str, int]:
        truth = rec["struc_info"][0]["skill_scores"]
        return {
            a: s
            if self.rng.random() < self.q * 0.8
            else max(1, min(5, s + self.rng.choice([-1, 1])))
            for a, s in truth.items()
        }

    def cvs_assessment(self, rec: dict[str, Any]) -> dict[str, int]:
        truth = rec["struc_info"][0]["cvs_scores"]
        return {
            k: v if self.rng.random() < 0.5 + self.q / 2 else self.rng.choice([0, 1, 2])
            for k, v in truth.items()
        }


# --- rendering --------------------------------------------------------------------------------


def render(task: str, content: Any) -> str:
    """Write answer content in the benchmark's canonical answer format."""
    if task == "tal":
        return ", ".join(f"{a:.1f}-{b:.1f}" for a, b in content) + " seconds."
    if task == "stg":
        return " ".join(
            f"{k} seconds: [{', '.join(f'{v:g}' for v in b)}]" for k, b in content.items()
        )
    if task == "dense_captioning":
        return "\n".join(f"{a:.1f}-{b:.1f} seconds: {c}" for a, b, c in content)
    if task == "skill_assessment":
        return ", ".join(f"{a}: {s}/5" for a, s in content.items())
    if task == "cvs_assessment":
        names = dict(V.CVS_COMPONENTS)
        return ", ".join(f"{names[k]}: {v}" for k, v in content.items())
    return str(content)


def render_noisy(task: str, content: Any, rng: random.Random) -> str:
    """Write the same content in a variant format a lenient reader still understands."""
    pick = rng.randrange(3)
    if task == "tal":
        return [
            ", ".join(f"{a:.1f}–{b:.1f}" for a, b in content) + " seconds.",
            ", ".join(f"{a:.1f}s - {b:.1f}s" for a, b in content),
            "The action happens "
            + " and ".join(f"from {a:.1f} to {b:.1f} seconds" for a, b in content)
            + ".",
        ][pick]
    if task == "stg":
        unit = ["second:", "s:", "Seconds:"][pick]
        sep = "" if unit == "s:" else " "
        return " ".join(
            f"{k}{sep}{unit} [{', '.join(f'{v:g}' for v in b)}]" for k, b in content.items()
        )
    if task == "next_action":
        label = str(content)
        return [label.capitalize(), f"{label}.", f"Next step: {label}"][pick]
    if task == "dense_captioning":
        lines = [f"{a:.1f} - {b:.1f} seconds: {c}" for a, b, c in content]
        return [
            "\n".join(f"- {a:.1f}-{b:.1f} seconds: {c}" for a, b, c in content),
            " ".join(f"{a:.1f}-{b:.1f} seconds: {c}" for a, b, c in content),
            "\n".join(lines),
        ][pick]
    if task == "skill_assessment":
        parts = [f"{a}: {s}/5" for a, s in content.items()]
        return [", ".join(p.lower() for p in parts), "; ".join(parts), "\n".join(parts)][pick]
    if task == "cvs_assessment":
        names = dict(V.CVS_COMPONENTS)
        parts = [f"{names[k]}: {v}" for k, v in content.items()]
        return [
            ", ".join(p.lower().replace("structures", "structure") for p in parts),
            "; ".join(parts),
            "\n".join(parts),
        ][pick]
    return f"**Summary:** {content}"


def garbage(rec: dict[str, Any], rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(V.GARBAGE)
    return " ".join(rng.choice(V.VERBS + V.OBJECTS_SURGERY) for _ in range(rng.randrange(1, 12)))


def shuffle_keeping_groups(
    records: list[dict[str, Any]], rng: random.Random
) -> list[dict[str, Any]]:
    """Shuffle records, but keep the relative order of records sharing an id and qa_type.

    Matching by identity pairs the k-th record of an (id, qa_type) with the k-th such sample;
    only an ``index`` or ``question`` field can say more, and prediction-only files have neither.
    """
    order = list(range(len(records)))
    rng.shuffle(order)
    queues: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        queues.setdefault((r["id"], r["qa_type"]), []).append(r)
    out = []
    for i in order:
        key = (records[i]["id"], records[i]["qa_type"])
        out.append(queues[key].pop(0))
    return out


def generate_predictions(
    gt: list[dict[str, Any]], archetype: str, seed: int = 0
) -> list[dict[str, Any]]:
    """The prediction-only file of one archetype for a synthetic ground truth."""
    if archetype not in ARCHETYPES:
        raise ValueError(
            f"unknown archetype {archetype!r}; expected one of {', '.join(ARCHETYPES)}"
        )
    texts: list[str]
    if archetype == "perfect":
        texts = [_gt_text(r) for r in gt]
    elif archetype == "garbage":
        rng = random.Random(f"{seed}:garbage")
        texts = [garbage(r, rng) for r in gt]
    else:
        base = "weak" if archetype == "weak" else "strong"
        answerer = Answerer(QUALITY[base], random.Random(f"{seed}:{base}"))
        contents = [answerer.content(r) for r in gt]
        if archetype == "format-noisy":
            rng = random.Random(f"{seed}:noise")
            texts = [render_noisy(t, c, rng) for t, c in contents]
        else:
            texts = [render(t, c) for t, c in contents]
    records = [
        {"id": _sid(r), "qa_type": r["qa_type"], "prediction": t}
        for r, t in zip(gt, texts, strict=True)
    ]
    if archetype == "shuffled":
        records = shuffle_keeping_groups(records, random.Random(f"{seed}:shuffle"))
    if archetype == "partial":
        records = [r for r in records if task_for_qa_type(r["qa_type"]) not in PARTIAL_DROPS]
    return records
