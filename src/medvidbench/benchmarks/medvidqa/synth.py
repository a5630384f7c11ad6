"""A synthetic MedVidQA test set in the official format, and model answers of known behaviour.

Demo data only: the questions are made from a small table of first-aid and nursing topics, the
video ids are random and name no real video, and no score on them means anything about a model.
The shape is the real one: 200 questions (by default) over about 60 videos of 1.5 to 20 minutes,
whole-second answer spans of 8 s to 2.5 min, a few of which run past the video's end (the
loader clips them, as the official code does). Archetypes:

- ``perfect``: the (clipped) truth, in the challenge format;
- ``strong``: the truth with its ends moved by up to 30 % of its length each (by up to 120 %
  one time in seven);
- ``verbose``: text answers ("The answer is shown from 01:05 to 02:10."), the ends moved by up
  to 30 % three times in four and by up to 100 % otherwise, and now and then no time at all;
- ``weak``: a span of random length anywhere in the video;
- ``garbage``: text with no time in it (every answer unread: IoU 0).
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

ARCHETYPES = ("perfect", "strong", "verbose", "weak", "garbage")

_TOPICS = (
    "apply a tourniquet to stop bleeding from the arm",
    "perform chest compressions on an adult",
    "measure blood pressure with a manual cuff",
    "clean and dress a small cut",
    "use a metered-dose asthma inhaler with a spacer",
    "put on a knee brace",
    "stretch the neck to relieve pain",
    "place someone in the recovery position",
    "check a pulse at the wrist",
    "use an epinephrine auto-injector",
    "wrap a sprained ankle with an elastic bandage",
    "help a choking adult with abdominal thrusts",
    "insert a contact lens",
    "give an insulin injection with a pen",
    "brush teeth to prevent gum disease",
    "do a shoulder exercise after surgery",
)
_FORMS = ("How to {}?", "How do you {}?", "What is the right way to {}?", "How should I {}?")
_ID_CHARS = string.ascii_letters + string.digits + "-_"


def _clock(seconds: int) -> str:
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def _video(rng: random.Random) -> dict[str, Any]:
    vid = "".join(rng.choice(_ID_CHARS) for _ in range(11))
    return {"video_id": vid, "video_length": rng.randint(90, 1200), "topic": rng.choice(_TOPICS)}


def generate_questions(samples: int, seed: int) -> list[dict[str, Any]]:
    """``samples`` questions in the official format, over about 3.3 questions per video."""
    rng = random.Random(seed)
    videos = [_video(rng) for _ in range(max(1, round(samples * 0.3)))]
    out = []
    for n in range(samples):
        video = videos[n % len(videos)] if n < len(videos) else rng.choice(videos)
        length = video["video_length"]
        span = rng.randint(8, min(150, length // 2))
        start = rng.randint(0, length - span)
        end = start + span if rng.random() > 0.03 else length + rng.randint(1, 6)
        out.append(
            {
                "sample_id": n + 1,
                "question": rng.choice(_FORMS).format(video["topic"]),
                "answer_start": _clock(start),
                "answer_end": _clock(end),
                "answer_start_second": start,
                "answer_end_second": end,
                "video_length": length,
                "video_id": video["video_id"],
                "video_url": f"https://www.youtube.com/watch?v={video['video_id']}",
            }
        )
    return out


def _truth(q: dict[str, Any]) -> tuple[float, float]:
    """The span the official loader keeps: clipped to the video."""
    return max(0.0, float(q["answer_start_second"])), min(
        float(q["answer_end_second"]), q["video_length"]
    )


def _near(q: dict[str, Any], rng: random.Random, share: float) -> tuple[float, float]:
    """The truth with each end moved by up to ``share`` of its length (kept in the video)."""
    start, end = _truth(q)
    reach = share * (end - start)
    a = min(max(0.0, start + rng.uniform(-reach, reach)), q["video_length"])
    b = min(max(0.0, end + rng.uniform(-reach, reach)), q["video_length"])
    return round(min(a, b), 1), round(max(a, b), 1)


def _text(q: dict[str, Any], rng: random.Random) -> str:
    if rng.random() < 0.08:
        return "The video does not show this clearly."
    start, end = _near(q, rng, 0.3 if rng.random() < 0.75 else 1.0)
    a, b = round(start), round(end)
    return rng.choice(
        [
            f"The answer is shown from {_clock(a)} to {_clock(b)}.",
            f"Between {start} and {end} seconds.",
            f"start: {_clock(a)}, end: {_clock(b)}",
        ]
    )


def _answer(q: dict[str, Any], archetype: str, rng: random.Random) -> dict[str, Any]:
    sid = q["sample_id"]
    if archetype == "verbose":
        return {"sample_id": sid, "prediction": _text(q, rng)}
    if archetype == "garbage":
        answer = rng.choice(["I cannot watch videos.", "", "n/a", "It is in the video."])
        return {"sample_id": sid, "prediction": answer}
    if archetype == "perfect":
        start, end = _truth(q)
    elif archetype == "strong":
        start, end = _near(q, rng, 0.3 if rng.random() < 0.85 else 1.2)
    else:  # weak
        length = float(q["video_length"])
        span = rng.uniform(5.0, length / 2)
        start = round(rng.uniform(0.0, length - span), 1)
        end = round(start + span, 1)
    return {"sample_id": sid, "answer_start_second": start, "answer_end_second": end}


def generate_predictions(
    questions: list[dict[str, Any]], archetype: str, seed: int
) -> list[dict[str, Any]]:
    """One archetype's answers, in the order of the questions."""
    rng = random.Random(f"{seed}/{archetype}")
    return [_answer(q, archetype, rng) for q in questions]


def write_synthetic(out_dir: Path, samples: int | None, seed: int) -> dict[str, Path]:
    """Write ``ground_truth.json`` and ``predictions_<archetype>.json`` into ``out_dir``;
    returns their paths by name (``ground_truth`` and each archetype)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    questions = generate_questions(200 if samples is None else samples, seed)
    written = {"ground_truth": out / "ground_truth.json"}
    written["ground_truth"].write_text(json.dumps(questions, indent=1), encoding="utf-8")
    for archetype in ARCHETYPES:
        path = out / f"predictions_{archetype}.json"
        path.write_text(json.dumps(generate_predictions(questions, archetype, seed)), "utf-8")
        written[archetype] = path
    return written
