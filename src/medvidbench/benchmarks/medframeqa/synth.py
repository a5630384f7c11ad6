"""A synthetic MedFrameQA test set and model answers of known behaviour (demo data only).

The test set is in the real test set's format (question_id, system, organ, keyword, modality,
video_id, question, options, correct_answer, image_1 ... image_5 as paths that do not exist):
questions about videos of several organ systems, organs and modalities, 2-5 frames each (about
the paper's mix), 4-6 options. It is generated, not medical data: no score on it means anything
about a model. Each archetype is a results file as the official inference writes it (records in
completion order, the parsed ``answer`` beside the raw ``cot_reasoning``), except ``terse``:

- ``perfect``: the right letter in the formats the official prompts ask for (``Answer: X``,
  ``$\\boxed{X}$``, QVQ's ``**Final Answer**``), which the official parser reads as X;
- ``strong``: right about 75 % of the time, mostly ``Answer: X``, now and then "The answer is X."
  (which the official parser cannot read and the tolerant one can);
- ``weak``: right about 35 % of the time, as ``(X)`` or as the option's text in a sentence;
- ``terse``: ``{"id", "prediction"}`` records, right about 80 % of the time, a bare ``X`` or
  ``(X)``: the official parser reads only the second, the tolerant one both;
- ``garbage``: empty answers, the official inference's API-failure text, and refusals.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from medvidbench.benchmarks.medframeqa.parser import official_letter
from medvidbench.benchmarks.medframeqa.testset import LETTERS

ARCHETYPES = ("perfect", "strong", "weak", "terse", "garbage")

# system -> (organs, diagnoses its questions choose among); names as the official CSV spells them
SYSTEMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "respiratory_system": (
        ("lung", "pleura", "trachea_bronchi"),
        (
            "Pneumonia",
            "Pulmonary embolism",
            "Pleural effusion",
            "Pneumothorax",
            "Lung abscess",
            "Bronchiectasis",
            "Sarcoidosis",
        ),
    ),
    "digestive_system": (
        ("liver", "pancreas", "large_intestine", "gallbladder"),
        (
            "Acute appendicitis",
            "Diverticulitis",
            "Hepatic cyst",
            "Cholecystitis",
            "Pancreatic pseudocyst",
            "Colonic volvulus",
            "Hemangioma",
        ),
    ),
    "reproductive_system": (
        ("breast", "uterus", "ovaries"),
        (
            "Fibroadenoma",
            "Phyllodes tumor",
            "Invasive ductal carcinoma",
            "Lipoma",
            "Simple cyst",
            "Uterine fibroid",
            "Endometrioma",
        ),
    ),
    "central_nervous_system": (
        ("brain", "spinal_cord"),
        (
            "Glioblastoma",
            "Meningioma",
            "Subdural hematoma",
            "Ischemic stroke",
            "Multiple sclerosis",
            "Brain abscess",
            "Syringomyelia",
        ),
    ),
    "musculoskeletal_system": (
        ("bones", "joints", "spine"),
        (
            "Osteosarcoma",
            "Stress fracture",
            "Osteomyelitis",
            "Septic arthritis",
            "Disc herniation",
            "Osteoid osteoma",
            "Gout",
        ),
    ),
}
MODALITIES = ("CT", "MRI", "ultrasound", "X-ray", "Others")
_MODALITY_WEIGHTS = (38, 34, 14, 10, 4)  # about the paper's shares
_FRAME_WEIGHTS = {2: 42, 3: 21, 4: 9, 5: 28}  # about the paper's 1186/602/256/807
_VIDEO_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _question(n: int, video: str, system: str, rng: random.Random) -> dict[str, Any]:
    organs, diagnoses = SYSTEMS[system]
    organ = rng.choice(organs)
    frames = rng.choices(list(_FRAME_WEIGHTS), weights=list(_FRAME_WEIGHTS.values()))[0]
    options = rng.sample(diagnoses, rng.randint(4, 6))
    key = rng.randrange(len(options))
    qid = f"mfqa-{n:05d}"
    record: dict[str, Any] = {
        "question_id": qid,
        "system": system,
        "organ": organ,
        "keyword": options[key].lower(),
        "modality": rng.choices(MODALITIES, weights=_MODALITY_WEIGHTS)[0],
        "video_id": video,
        "question": f"Comparing the {frames} frames, which diagnosis best explains the "
        f"{organ.replace('_', ' ')} findings?",
        "options": options,
        "correct_answer": LETTERS[key],
    }
    for k in range(1, 6):
        record[f"image_{k}"] = f"images/{qid}_{k}.png" if k <= frames else None
    return record


def generate_questions(samples: int, seed: int) -> list[dict[str, Any]]:
    """``samples`` questions over videos of 1-4 questions each, every system represented."""
    rng = random.Random(seed)
    systems = list(SYSTEMS)
    out: list[dict[str, Any]] = []
    videos = 0
    while len(out) < samples:
        video = "".join(rng.choice(_VIDEO_CHARS) for _ in range(11))
        system = systems[videos] if videos < len(systems) else rng.choice(systems)
        videos += 1
        for _ in range(min(rng.randint(1, 4), samples - len(out))):
            out.append(_question(len(out), video, system, rng))
    return out


def _reasoning(q: dict[str, Any], rng: random.Random) -> str:
    frames = sum(q[f"image_{k}"] is not None for k in range(1, 6))
    seen = rng.choice(("an evolving lesion", "a stable finding", "new fluid", "a mass effect"))
    return (
        f"The {_ORDINALS[0]} image shows the {q['organ'].replace('_', ' ')}; by the "
        f"{_ORDINALS[frames - 1]} image there is {seen}, so the options narrow down."
    )


def _formatted(letter: str, q: dict[str, Any], rng: random.Random) -> str:
    """A right-format answer the official parser reads as ``letter``."""
    style = rng.randrange(3)
    if style == 0:
        return f"{_reasoning(q, rng)}\nAnswer: {letter}"
    if style == 1:
        return f"{_reasoning(q, rng)}\nThe final answer is $\\boxed{{{letter}}}$"
    return f"{_reasoning(q, rng)}\n\n**Final Answer**\n\n\\[ \\boxed{{{letter}}} \\]"


def _answer(q: dict[str, Any], archetype: str, rng: random.Random) -> str:
    letters = LETTERS[: len(q["options"])]
    right = str(q["correct_answer"])
    if archetype == "perfect":
        return _formatted(right, q, rng)
    if archetype == "garbage":
        return rng.choice(("", "openai error, retry", "I cannot tell from these images", "???"))
    rate = {"strong": 0.75, "weak": 0.35, "terse": 0.8}[archetype]
    pick = right if rng.random() < rate else rng.choice([c for c in letters if c != right])
    if archetype == "strong":
        return f"The answer is {pick}." if rng.random() < 0.1 else _formatted(pick, q, rng)
    if archetype == "terse":
        return rng.choice((pick, f"({pick})"))
    if rng.random() < 0.5:
        return f"Looking at every frame I would go with ({pick})"
    text = q["options"][letters.index(pick)].lower()
    return f"on balance the frames look most like {text} to me"


def generate_predictions(
    questions: list[dict[str, Any]], archetype: str, seed: int
) -> list[dict[str, Any]]:
    """One archetype's file: official results records in a shuffled (completion) order, or
    ``{"id", "prediction"}`` records for ``terse``."""
    rng = random.Random(f"{seed}/{archetype}")
    answers = [(q, _answer(q, archetype, rng)) for q in questions]
    if archetype == "terse":
        return [{"id": q["question_id"], "prediction": text} for q, text in answers]
    records = [
        {
            "cot_reasoning": text,
            "answer": official_letter(text, q["options"]),
            "question_id": q["question_id"],
            "correct_answer": q["correct_answer"],
        }
        for q, text in answers
    ]
    rng.shuffle(records)
    return records


def write_synthetic(out_dir: Path, samples: int | None, seed: int) -> dict[str, Path]:
    """Write ``ground_truth.json`` and ``predictions_<archetype>.json`` into ``out_dir``;
    returns their paths by name (``ground_truth`` and each archetype)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    questions = generate_questions(300 if samples is None else samples, seed)
    written = {"ground_truth": out / "ground_truth.json"}
    written["ground_truth"].write_text(json.dumps(questions, indent=1), encoding="utf-8")
    for archetype in ARCHETYPES:
        path = out / f"predictions_{archetype}.json"
        records = generate_predictions(questions, archetype, seed)
        path.write_text(json.dumps(records, indent=4), encoding="utf-8")
        written[archetype] = path
    return written
