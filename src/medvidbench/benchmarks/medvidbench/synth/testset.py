"""A synthetic MedVidBench test set in the real SFT-style ground-truth format.

Deterministic for a given seed and size. The task mix follows the published test set's counts
(6,245 samples by default), clips carry several questions as in the real data, and questions,
answers and ``struc_info`` follow each task's real shapes (metrics.md §3).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from medvidbench.benchmarks.medvidbench.nap_classes import nap_classes
from medvidbench.benchmarks.medvidbench.synth import vocab as V
from medvidbench.benchmarks.medvidbench.synth.questions import WRITERS
from medvidbench.benchmarks.medvidbench.tasks.registry import VARIANT_TEST_COUNTS, task_for_qa_type
from medvidbench.core.errors import UsageError

REUSE_CLIP = 0.35  # chance that a question is about a clip that already has one


@dataclass(slots=True)
class Clip:
    dataset: str
    video_id: str
    start: int
    end: int
    fps: str
    duration: float


def variant_counts(total: int) -> dict[str, int]:
    """Split ``total`` samples over the qa_type variants in the published proportions.

    Largest-remainder rounding, so the counts add up exactly; with the default 6,245 they are
    the published counts.

    Examples:
        >>> variant_counts(6245)["tal"]
        1637
        >>> sum(variant_counts(1000).values())
        1000
    """
    published = sum(VARIANT_TEST_COUNTS.values())
    exact = {k: total * v / published for k, v in VARIANT_TEST_COUNTS.items()}
    counts = {k: int(x) for k, x in exact.items()}
    for k in sorted(exact, key=lambda k: (counts[k] - exact[k], k))[: total - sum(counts.values())]:
        counts[k] += 1
    for k in [k for k, n in counts.items() if n == 0]:  # tiny sets still cover every variant
        counts[max(counts, key=counts.__getitem__)] -= 1
        counts[k] = 1
    return counts


class TestSetWriter:
    """Builds ground-truth records one question at a time from a seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clips: dict[str, list[Clip]] = {}
        self.serial = 0
        self.nap = nap_classes()

    # --- clips -------------------------------------------------------------------------------

    def clip(self, dataset: str) -> Clip:
        pool = self.clips.setdefault(dataset, [])
        if pool and self.rng.random() < REUSE_CLIP:
            return self.rng.choice(pool[-20:])
        rng = self.rng
        fps = rng.choices([f for f, _ in V.FPS_CHOICES], [w for _, w in V.FPS_CHOICES])[0]
        duration = float(rng.choice([10, 16, 20, 24, 30, 40, 60, 90, 120]))
        start = rng.randrange(0, 60_000)
        clip = Clip(
            dataset, self.video_id(dataset), start, start + int(duration * 25), fps, duration
        )
        pool.append(clip)
        return clip

    def video_id(self, dataset: str) -> str:
        self.serial += 1
        rng, n = self.rng, self.serial
        if dataset == "AVOS":
            alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
            return "".join(rng.choice(alphabet) for _ in range(10)) + rng.choice("AEIMQUYcgkosw")
        if dataset == "CoPESD":
            return f"{rng.randrange(1, 400)}_part{rng.randrange(1, 30)}"
        if dataset in ("CholecT50", "CholecTrack20"):
            return f"VID{rng.randrange(1, 112):02d}_{n}"
        if dataset == "Cholec80_CVS":
            return f"video{rng.randrange(1, 81):02d}_{n}"
        if dataset == "EgoSurgery":
            return f"{rng.randrange(1, 22):02d}_{rng.randrange(1, 9)}_{n}"
        if dataset == "JIGSAWS":
            task = rng.choice(V.JIGSAWS_TASKS)
            return f"{task}_{rng.choice('BCDEFGHI')}{rng.randrange(1, 6):03d}_{n}"
        return f"nurvid_{rng.randrange(10**6, 10**7)}_{n}"

    # --- records -----------------------------------------------------------------------------

    def record(self, qa_type: str) -> dict[str, Any]:
        task = task_for_qa_type(qa_type)
        assert task is not None
        weights = V.TASK_DATASETS[task]
        dataset = self.rng.choices(list(weights), list(weights.values()))[0]
        clip = self.clip(dataset)
        question, answer, struc = WRITERS[task](self, clip, qa_type)
        record: dict[str, Any] = {
            "conversations": [
                {"from": "human", "value": "<video>\n" + question},
                {"from": "gpt", "value": answer},
            ],
            "metadata": {
                "video_id": clip.video_id,
                "fps": clip.fps,
                "input_video_start_frame": str(clip.start),
                "input_video_end_frame": str(clip.end),
            },
            "qa_type": qa_type,
            "struc_info": struc,
            "data_source": dataset,
        }
        if task == "region_caption":
            record["is_RC"] = True
            record["RC_info"] = {"start_frame": 0, "start_frame_bbox": self.box(dataset)}
        return record

    def role(self, dataset: str) -> str:
        return self.rng.choice(V.ROLES["NurViD" if dataset == "NurViD" else "surgery"])

    def spans(self, clip: Clip, n: int) -> list[tuple[float, float]]:
        cuts = sorted(round(self.rng.uniform(0, clip.duration), 1) for _ in range(2 * n))
        return [(a, b) for a, b in zip(cuts[::2], cuts[1::2], strict=True) if b - a >= 0.5] or [
            (0.0, round(clip.duration / 2, 1))
        ]

    def procedure(self) -> tuple[str, list[str]]:
        name = self.rng.choice(list(self.nap["NurViD_procedures"]))
        return name, list(self.nap["NurViD_procedures"][name])

    def box(self, dataset: str) -> list[float]:
        w, h = V.FRAME_SIZE.get(dataset, (1280, 720))
        x1, y1 = self.rng.uniform(0, w * 0.7), self.rng.uniform(0, h * 0.7)
        bw, bh = self.rng.uniform(w * 0.08, w * 0.3), self.rng.uniform(h * 0.08, h * 0.3)
        return [round(x1, 2), round(y1, 2), round(min(x1 + bw, w), 2), round(min(y1 + bh, h), 2)]

    def sentence(self, dataset: str) -> str:
        rng = self.rng
        actor = rng.choice(V.ACTORS if dataset == "NurViD" else V.SURGEONS)
        things = V.OBJECTS_NURSING if dataset == "NurViD" else V.OBJECTS_SURGERY
        return (
            f"{actor} {rng.choice(V.VERBS)} {rng.choice(things)} {rng.choice(V.MANNERS)} "
            f"{rng.choice(V.PURPOSES)}."
        )


def generate_ground_truth(samples: int = 6245, seed: int = 0) -> list[dict[str, Any]]:
    """Generate a synthetic test set of ``samples`` records (100 to 531,850 and beyond).

    The records are interleaved across tasks, as in the real file.
    """
    if samples < 11:
        raise UsageError("a synthetic test set needs at least 11 samples (one per qa_type)")
    writer = TestSetWriter(seed)
    order = [qa for qa, n in variant_counts(samples).items() for _ in range(n)]
    writer.rng.shuffle(order)
    return [writer.record(qa) for qa in order]
