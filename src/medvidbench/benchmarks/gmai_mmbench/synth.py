"""A synthetic GMAI-MMBench test set in VLMEvalKit's TSV layout, and prediction files of known
behaviour as VLMEvalKit writes them (demo data only: no image, no medical meaning).

The test set has the real columns (``index``, ``image``: a 1x1 placeholder, ``question``,
``A``-``E``, ``answer``, ``category``, ``clinical VQA task``, ``department``, ``perceptual
granularity``, ``modality``), 2 to 5 options per question, over several departments, tasks,
granularities and modalities; one department is ``None``, as in the paper (pandas reads it as
missing, hence the group ``None``). Each archetype's file is VLMEvalKit's ``.tsv`` prediction
file: the dataset's columns but ``image``, plus ``prediction``, every field quoted:

- ``perfect``: the right letter, alone;
- ``strong``: right 85 % of the time, as a letter, ``(B)``, ``Answer: B``, ``B. text`` or the
  option's text;
- ``weak``: right 40 % of the time, in the same forms, sometimes two letters ("A or C");
- ``verbose``: right 80 % of the time, the letter early in a sentence ("The answer is B because
  ..."): read by the 2024 rules, by the current ones only through "answer is", and not at all
  by those of 2025-08 (the profiles differ on it);
- ``garbage``: no readable answer (empty, ``n/a``, a refusal, full-width punctuation).
"""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path
from typing import Any

ARCHETYPES = ("perfect", "strong", "weak", "verbose", "garbage")
LETTERS = "ABCDE"
# A 1x1 PNG, base64: the image column VLMEvalKit's TSV carries (never opened here).
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"
    "60e6kgAAAABJRU5ErkJggg=="
)
COLUMNS = (
    "index",
    "image",
    "question",
    *LETTERS,
    "answer",
    "category",
    "clinical VQA task",
    "department",
    "perceptual granularity",
    "modality",
)
GRANULARITIES = ("image level", "box level", "mask level", "contour level")

# (department, modality, clinical VQA task, question, option labels)
SCENES: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    (
        "Pulmonary Medicine",
        "X-ray",
        "Disease Diagnosis",
        "Which finding does the image show?",
        ("pneumonia", "tuberculosis", "pleural effusion", "pneumothorax", "normal lungs"),
    ),
    (
        "Ophthalmology",
        "Fundus Photography",
        "Severity Grading",
        "What is the grade of retinopathy?",
        ("mild", "moderate", "severe", "proliferative", "no retinopathy"),
    ),
    (
        "Urology",
        "CT",
        "Organ Recognition - Abdomen",
        "Which organ is marked?",
        ("kidney", "liver", "spleen", "pancreas", "gallbladder"),
    ),
    (
        "Dermatology",
        "Dermoscopy",
        "Disease Diagnosis",
        "Which lesion is this?",
        ("melanoma", "nevus", "basal cell carcinoma", "seborrheic keratosis", "dermatofibroma"),
    ),
    (
        "Laboratory Medicine and Pathology",
        "Microscopy",
        "Cell Recognition",
        "Which cell type is marked?",
        ("neutrophil", "lymphocyte", "monocyte", "eosinophil", "basophil"),
    ),
    (
        "General Surgery",
        "Endoscopy",
        "Surgical Instrument Recognition",
        "Which instrument is in use?",
        ("grasper", "scissors", "hook", "clipper", "irrigator"),
    ),
    (
        "None",
        "X-ray",
        "Image Quality Grading",
        "How good is the image quality?",
        ("good quality", "usable quality", "reject quality"),
    ),
)


def generate_questions(samples: int, seed: int) -> list[dict[str, str]]:
    """``samples`` dataset rows, each 2-5 options with the right one at a random letter."""
    rng = random.Random(seed)
    rows = []
    for n in range(samples):
        department, modality, task, asked, labels = SCENES[rng.randrange(len(SCENES))]
        texts = rng.sample(labels, rng.randint(2, min(5, len(labels))))
        right = rng.randrange(len(texts))
        options = {k: (texts[i] if i < len(texts) else "") for i, k in enumerate(LETTERS)}
        rows.append(
            {
                "index": str(n + 1),
                "image": PIXEL,
                "question": f"This is a {modality} image. {asked}",
                **options,
                "answer": LETTERS[right],
                "category": texts[right],
                "clinical VQA task": task,
                "department": department,
                "perceptual granularity": rng.choice(GRANULARITIES),
                "modality": modality,
            }
        )
    return rows


def _options(row: dict[str, str]) -> dict[str, str]:
    return {k: row[k] for k in LETTERS if row[k]}


def _pick(row: dict[str, str], rate: float, rng: random.Random) -> str:
    """The right letter with probability ``rate``, else a wrong one."""
    wrong = [k for k in _options(row) if k != row["answer"]]
    return row["answer"] if rng.random() < rate or not wrong else rng.choice(wrong)


def _answer(row: dict[str, str], archetype: str, rng: random.Random) -> str:
    options = _options(row)
    if archetype == "perfect":
        return row["answer"]
    if archetype == "garbage":
        return rng.choice(["", "n/a", "???", "Cannot determine the answer", "答案：B", "（C）"])
    if archetype == "verbose":
        # the letter early, and no option's text: only the letter rules can read it
        return f"The answer is {_pick(row, 0.8, rng)} because of what the marked region shows."
    pick = _pick(row, 0.85 if archetype == "strong" else 0.4, rng)
    forms = [pick, f"({pick})", f"Answer: {pick}", f"{pick}. {options[pick]}", options[pick]]
    if archetype == "weak":
        other = rng.choice(list(options))
        forms.append(f"{min(pick, other)} or {max(pick, other)}" if other != pick else pick)
    return rng.choice(forms)


def prediction_table(rows: list[dict[str, str]], archetype: str, seed: int) -> bytes:
    """The ``.tsv`` VLMEvalKit writes for one archetype's answers: every dataset column but
    ``image``, then ``prediction``; every field quoted."""
    rng = random.Random(f"{seed}/{archetype}")
    header = [c for c in COLUMNS if c != "image"]
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow([*header, "prediction"])
    for row in rows:
        writer.writerow([*(row[c] for c in header), _answer(row, archetype, rng)])
    return out.getvalue().encode("utf-8")


def dataset_table(rows: list[dict[str, Any]]) -> bytes:
    """The dataset TSV, as VLMEvalKit's files are written (fields quoted only when needed)."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows([row[c] for c in COLUMNS] for row in rows)
    return out.getvalue().encode("utf-8")


def write_synthetic(out_dir: Path, samples: int | None, seed: int) -> dict[str, Path]:
    """Write ``ground_truth.tsv`` and ``predictions_<archetype>.tsv`` into ``out_dir``; returns
    their paths by name (``ground_truth`` and each archetype)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = generate_questions(300 if samples is None else samples, seed)
    written = {"ground_truth": out / "ground_truth.tsv"}
    written["ground_truth"].write_bytes(dataset_table(rows))
    for archetype in ARCHETYPES:
        path = out / f"predictions_{archetype}.tsv"
        path.write_bytes(prediction_table(rows, archetype, seed))
        written[archetype] = path
    return written
