"""A synthetic MCQA-Demo test set and model answers of known behaviour (demo data only).

The questions are generated from a small table of textbook facts; they are demo data for
trying the server and testing the plug-in seam, not a medical benchmark, and no score on them
means anything about a model. Each archetype answers in its own style:

- ``perfect``: the right letter, alone;
- ``strong``: right 85 % of the time, a bare letter, ``(B)`` or ``Answer: B``;
- ``verbose``: right 75 % of the time, in a sentence ("The answer is (C): ...", or the option's
  text alone): strict-match reads none of it, flexible-extract all of it;
- ``guesser``: a random letter;
- ``garbage``: no answer at all.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from medvidbench.benchmarks.mcqa_demo.testset import LETTERS

ARCHETYPES = ("perfect", "strong", "verbose", "guesser", "garbage")

# (subject, question, right answer, pool of wrong answers of the same kind)
_ORGANS = ("Liver", "Pancreas", "Spleen", "Kidney", "Stomach", "Gallbladder", "Thyroid")
_BONES = ("Femur", "Tibia", "Humerus", "Radius", "Scapula", "Sternum", "Patella")
_VESSELS = ("Aorta", "Pulmonary artery", "Carotid artery", "Portal vein", "Jugular vein")
FACTS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("physiology", "Which organ secretes insulin?", "Pancreas", _ORGANS),
    ("physiology", "Which organ stores bile?", "Gallbladder", _ORGANS),
    ("physiology", "Which organ filters blood to form urine?", "Kidney", _ORGANS),
    ("physiology", "Which gland produces thyroxine?", "Thyroid", _ORGANS),
    ("physiology", "Which organ produces bile?", "Liver", _ORGANS),
    ("anatomy", "Which is the longest bone of the human body?", "Femur", _BONES),
    ("anatomy", "Which bone is the kneecap?", "Patella", _BONES),
    ("anatomy", "Which bone is the breastbone?", "Sternum", _BONES),
    ("anatomy", "Which bone forms the upper arm?", "Humerus", _BONES),
    ("anatomy", "Which bone is the shoulder blade?", "Scapula", _BONES),
    ("vascular", "Which is the largest artery of the body?", "Aorta", _VESSELS),
    ("vascular", "Which vessel carries blood from the gut to the liver?", "Portal vein", _VESSELS),
    ("vascular", "Which vessel carries blood to the lungs?", "Pulmonary artery", _VESSELS),
    ("vascular", "Which artery is felt for a pulse in the neck?", "Carotid artery", _VESSELS),
)


def generate_questions(samples: int, seed: int) -> list[dict[str, Any]]:
    """``samples`` questions of 4 options each, the right one at a random letter."""
    rng = random.Random(seed)
    out = []
    for n in range(samples):
        subject, question, right, pool = FACTS[rng.randrange(len(FACTS))]
        texts = [right, *rng.sample([p for p in pool if p != right], 3)]
        rng.shuffle(texts)
        options = dict(zip(LETTERS, texts, strict=False))
        answer = next(k for k, v in options.items() if v == right)
        out.append(
            {
                "id": f"q{n:05d}",
                "subject": subject,
                "question": question,
                "options": options,
                "answer": answer,
            }
        )
    return out


def _answer(q: dict[str, Any], archetype: str, rng: random.Random) -> str:
    letters: list[str] = list(q["options"])
    wrong = [k for k in letters if k != q["answer"]]
    if archetype == "perfect":
        return str(q["answer"])
    if archetype == "guesser":
        return rng.choice(letters)
    if archetype == "garbage":
        return rng.choice(["", "I cannot tell from the question.", "???", "n/a"])
    rate = 0.85 if archetype == "strong" else 0.75
    pick: str = q["answer"] if rng.random() < rate else rng.choice(wrong)
    if archetype == "strong":
        return rng.choice([pick, f"({pick})", f"Answer: {pick}"])
    text = q["options"][pick]
    return rng.choice([f"The answer is ({pick}): {text}.", f"{text}, I would say."])


def generate_predictions(
    questions: list[dict[str, Any]], archetype: str, seed: int
) -> list[dict[str, str]]:
    """One archetype's answers, ``[{"id", "prediction"}]``."""
    rng = random.Random(f"{seed}/{archetype}")
    return [{"id": q["id"], "prediction": _answer(q, archetype, rng)} for q in questions]


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
