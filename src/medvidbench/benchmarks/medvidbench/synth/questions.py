"""One writer per task: a question, its reference answer and ``struc_info`` for a clip.

Shapes follow metrics.md §3: TAL spans in seconds, STG ``bbox_dict`` keyed "%.1f" seconds,
DVC segments (NurViD's ``dc_segments`` form and the nested-list form), SA ``skill_scores``,
CVS ``cvs_scores``.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from medvidbench.benchmarks.medvidbench.synth import vocab as V

if TYPE_CHECKING:
    from medvidbench.benchmarks.medvidbench.synth.testset import Clip, TestSetWriter

Written = tuple[str, str, Any]


def fmt(x: float) -> str:
    """Seconds as the benchmark writes them: one decimal."""
    return f"{x:.1f}"


def tal(w: TestSetWriter, clip: Clip, qa_type: str) -> Written:
    if clip.dataset == "NurViD":
        name, actions = w.procedure()
        action = w.rng.choice(actions)
        context = (
            f"{V.SETTINGS['NurViD']} In this {name} procedure video, possible actions are: "
            f"{', '.join(sorted(actions))}."
        )
    else:
        action = w.rng.choice(V.AVOS_ACTIONS)
        context = f"{V.SETTINGS['AVOS']} Possible actions are: {', '.join(V.AVOS_ACTIONS)}."
    spans = w.spans(clip, w.rng.choice([1, 1, 1, 2, 3]))
    question = f"{w.role(clip.dataset)} {context} Find the segment(s) where {action} happens."
    answer = ", ".join(f"{fmt(a)}-{fmt(b)}" for a, b in spans) + " seconds."
    struc = [{"action": action, "spans": [{"start": a, "end": b} for a, b in spans]}]
    return question, answer, struc


def stg(w: TestSetWriter, clip: Clip, qa_type: str) -> Written:
    obj = w.rng.choice(V.OBJECTS[clip.dataset])
    step = w.rng.choice([1, 2, 4, 5])
    first = w.rng.randrange(0, max(1, int(clip.duration) // 3))
    times = [float(t) for t in range(first, int(clip.duration), step)][: w.rng.randrange(2, 6)]
    box = w.box(clip.dataset)
    boxes: dict[str, list[float]] = {}
    for t in times:
        dx, dy = w.rng.uniform(-30, 30), w.rng.uniform(-30, 30)
        box = [
            round(max(0.0, box[0] + dx), 2),
            round(max(0.0, box[1] + dy), 2),
            round(box[2] + dx, 2),
            round(box[3] + dy, 2),
        ]
        boxes[fmt(t)] = box
    last = int(times[-1])
    question = (
        f"{w.role(clip.dataset)} {V.SETTINGS[clip.dataset]} What are the bounding boxes "
        f"of the {obj} sampled every {step} seconds from {int(times[0])} to {last} seconds?"
    )
    answer = " ".join(f"{k} seconds: [{', '.join(f'{v:g}' for v in b)}]" for k, b in boxes.items())
    return question, answer, [{"object": obj, "bbox_dict": boxes}]


def next_action(w: TestSetWriter, clip: Clip, qa_type: str) -> Written:
    d = clip.dataset
    if d == "NurViD":
        name, steps = w.procedure()
        label = w.rng.choice(steps)
        context = (
            f"{V.SETTINGS['NurViD']} This clip is from the {name} procedure, whose steps "
            f"include {steps}."
        )
    else:
        steps = w.nap["EgoSurgery_reference_only"] if d == "EgoSurgery" else w.nap[d]
        label = w.rng.choice(steps)
        context = f"{V.SETTINGS[d]} The procedure includes the following step list: {steps}."
    question = f"{w.role(d)} {context} What comes next after the current video?"
    return question, label, []


def dense_captioning(w: TestSetWriter, clip: Clip, qa_type: str) -> Written:
    if clip.dataset == "NurViD":
        name, labels = w.procedure()
        scope = f"In this {name} procedure video, create an event list restricted to actions in "
        scope += ", ".join(sorted(labels)) + "."
    else:
        labels = V.AVOS_ACTIONS if clip.dataset == "AVOS" else w.nap["CoPESD"]
        scope = f"Describe the events involving {', '.join(labels)}."
    ask = (
        "For each event: (1) start_time, (2) end_time, (3) description of this event."
        if qa_type.endswith("gemini")
        else "Return a list of non-overlapping segments with [start_time, end_time] and a factual "
        "caption."
    )
    # Real answers list one to a few events per clip (one-shot examples show one).
    cuts = w.rng.choices([0, 1, 2, 3], [0.35, 0.35, 0.2, 0.1])[0]
    inner = {round(w.rng.uniform(1, clip.duration - 1), 0) for _ in range(cuts)}
    bounds = sorted({0.0, *inner, clip.duration})
    segments: list[dict[str, Any]] = []
    for a, b in pairwise(bounds):
        label = w.rng.choice(labels)
        segments.append(
            {"start": a, "end": b, "caption": f"{label.lower()}: {w.sentence(clip.dataset)}"}
        )
    answer = "\n".join(
        f"{fmt(s['start'])}-{fmt(s['end'])} seconds: {s['caption']}" for s in segments
    )
    struc = [{"dc_segments": segments}] if clip.dataset == "NurViD" else [segments]
    question = f"{w.role(clip.dataset)} {V.SETTINGS[clip.dataset]} {scope} {ask}"
    return question, answer, struc


def video_summary(w: TestSetWriter, clip: Clip, qa_type: str) -> Written:
    ask = (
        "Summarize the video content in a short paragraph, focusing on the main idea or purpose."
        if qa_type.endswith("gemini")
        else "Give a concise overview of what the video is about, without going into detailed "
        "steps."
    )
    rng = w.rng
    answer = (
        f"{rng.choice(V.SUMMARY_OPENERS)} {rng.choice(V.SUMMARY_FOCUS)}, "
        f"{rng.choice(V.SUMMARY_CLOSERS)} {w.sentence(clip.dataset)}"
    )
    return f"{w.role(clip.dataset)} {V.SETTINGS[clip.dataset]} {ask}", answer, []


def region_caption(w: TestSetWriter, clip: Clip, qa_type: str) -> Written:
    a = 0.0
    b = clip.duration
    obj = w.rng.choice(V.OBJECTS[clip.dataset])
    ask = (
        f"From {fmt(a)} seconds to {fmt(b)} seconds, what is the object doing in the region "
        f"given by the bounding box at {fmt(a)} seconds?"
        if qa_type.endswith("gemini")
        else f"Describe the activity or state of the object inside the bounding box at {fmt(a)} "
        f"seconds, over the interval from {fmt(a)} to {fmt(b)} seconds."
    )
    answer = (
        f"{w.rng.choice(V.HANDS)} the {obj} {w.rng.choice(V.VERBS)} "
        f"{w.rng.choice(V.OBJECTS_SURGERY)} {w.rng.choice(V.PURPOSES)}."
    )
    return f"{w.role(clip.dataset)} {V.SETTINGS[clip.dataset]} {ask}", answer, []


def skill_assessment(w: TestSetWriter, clip: Clip, qa_type: str) -> Written:
    base = w.rng.choice([1.5, 2.5, 4.0])
    scores = {a: max(1, min(5, round(base + w.rng.uniform(-1.4, 1.4)))) for a in V.SA_ASPECTS}
    mean = sum(scores.values()) / len(scores)
    level = "N" if mean <= 2.0 else "I" if mean <= 3.5 else "E"
    if w.rng.random() < 0.1:  # JIGSAWS levels are by experience, not always by these scores
        level = w.rng.choice("NIE")
    question = (
        f"{w.role('JIGSAWS')} {V.SETTINGS['JIGSAWS']} Review the surgical procedure and "
        f"score the following aspects (1,2,3,4,5 scale): {', '.join(V.SA_ASPECTS)}."
    )
    answer = ", ".join(f"{a}: {s}/5" for a, s in scores.items())
    return question, answer, [{"skill_level": level, "skill_scores": scores}]


def cvs_assessment(w: TestSetWriter, clip: Clip, qa_type: str) -> Written:
    scores = {k: w.rng.choices([0, 1, 2], [0.5, 0.3, 0.2])[0] for k, _ in V.CVS_COMPONENTS}
    question = (
        f"You are an expert in intraoperative safety assessment. {V.SETTINGS['Cholec80_CVS']}"
        " Using Strasberg's guidelines for the Critical View of Safety, assign a score "
        "(0,1,2) to each of the following: (1) confirmation that exactly two structures "
        "enter the gallbladder, (2) proper dissection of the gallbladder off the cystic "
        "plate, and (3) full clearance of the hepatocystic triangle."
    )
    answer = ", ".join(f"{name}: {scores[key]}" for key, name in V.CVS_COMPONENTS)
    return question, answer, [{"cvs_scores": scores}]


WRITERS: dict[str, Callable[[TestSetWriter, Clip, str], Written]] = {
    "tal": tal,
    "stg": stg,
    "next_action": next_action,
    "dense_captioning": dense_captioning,
    "video_summary": video_summary,
    "region_caption": region_caption,
    "skill_assessment": skill_assessment,
    "cvs_assessment": cvs_assessment,
}
