"""MedFrameQA's one task as a training reward (docs/rewards.md).

The raw reward of a completion is 1 when the official parser reads the key letter from it and 0
otherwise (no letter read, another letter), under the ``official`` profile, the board's: a
model is rewarded for answers in the format the board reads, and the mean raw reward over the
test questions is the board's accuracy. Gated by format (a letter was read), so that however
hard a question's organ system, an unreadable answer earns nothing after normalisation; an
answer longer than the board accepts (it refuses such a file) earns nothing either. A
training row's ground truth is the question (``encode``/``decode``); its prompt is what the
official inference sends (the instruction, then the question and its lettered options), with
the question's frames as images.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import msgspec
import numpy as np

from medvidbench.benchmarks.medframeqa.testset import FRAME_FIELDS, LETTERS, TASK, Question
from medvidbench.core.rewards import RewardSpec, TaskReward
from medvidbench.core.scoring import SampleResult
from medvidbench.core.submission import MAX_ANSWER_CHARS

# The official inference's instruction to models other than Gemini and QVQ (its
# config/prompt.yaml, eval_system_prompt, at commit e83fbe3), as it is: typographic quotes and
# a stray closing quote included. It sends it as the system message; a reward prompt is one
# user turn, so it comes first there.
INSTRUCTION = (
    "Answer the following multiple-choice question. Images are provided. The last line of your "
    "response should be strictly of the following format: ’Answer: $LETTER’ (without quotes) "
    "where LETTER is one of the options. For example, if the correct answer is A, your "
    'response should be: ’Answer: A’. Think step by step before answering."'
)


class RewardItem(msgspec.Struct, forbid_unknown_fields=True):
    """A training row's ground-truth column (JSON)."""

    id: str
    question: str
    options: list[str]
    answer: str
    frames: list[str]
    system: str = ""
    organ: str = ""
    keyword: str = ""
    modality: str = ""
    video_id: str = ""


def encode(item: Question, extras: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": item.sample_id,
        "question": item.question,
        "options": list(item.options),
        "answer": item.answer,
        "frames": list(item.frames),
        "system": item.dataset,
        "organ": item.organ,
        "keyword": item.keyword,
        "modality": item.modality,
        "video_id": item.video_id,
    }


def decode(data: Mapping[str, Any]) -> tuple[Question, dict[str, Any]]:
    try:
        rec = msgspec.convert(data, RewardItem)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc)) from None
    if not 2 <= len(rec.options) <= len(LETTERS):
        raise ValueError(f"options must hold 2 to {len(LETTERS)} texts; got {len(rec.options)}")
    if not all(o.strip() for o in rec.options):  # as the test-set loader: an empty option
        raise ValueError("options must be non-empty texts")  # would match every long answer
    letters = LETTERS[: len(rec.options)]
    if len(rec.answer) != 1 or rec.answer not in letters:
        raise ValueError(f"answer must be one of the option letters {letters}; got {rec.answer!r}")
    most = len(FRAME_FIELDS)  # the test set's image_1 ... image_5
    if not 1 <= len(rec.frames) <= most or not all(f.strip() for f in rec.frames):
        raise ValueError(f"frames must name 1 to {most} images; got {rec.frames!r:.200}")
    item = Question(
        0,
        rec.id,
        TASK,
        rec.system,
        rec.organ,
        rec.keyword,
        rec.modality,
        rec.video_id,
        rec.question,
        tuple(rec.options),
        rec.answer,
        tuple(rec.frames),
    )
    return item, {}


def question_text(item: Question) -> str:
    """The official inference's user turn (its ``eval_prompt_template``): the question after
    ``Question:`` and a space, then its options as the script formats them, a Python list of
    ``"A. text"`` strings printed as a list.

    Examples:
        >>> q = Question(0, "1", "frameqa", "s", "o", "k", "m", "v", "Which?", ("x", "y"), "A",
        ...              ("f1.jpg",))
        >>> question_text(q)
        "Question:Which? \\n\\nOptions:\\n['A. x', 'B. y']\\n"
    """
    lettered = [f"{LETTERS[i]}. {text}" for i, text in enumerate(item.options)]
    return f"Question:{item.question} \n\nOptions:\n{lettered!r}\n"


def prompt(item: Question) -> dict[str, Any]:
    return {
        "question": f"{INSTRUCTION}\n\n{question_text(item)}",
        "media": {"images": list(item.frames)},
    }


def visuals(item: Question, record: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The question's frames, as the training file names them."""
    return {"images": list(item.frames), "videos": []}


def _correct(r: SampleResult) -> float:
    return float((r.values or {}).get("accuracy", 0.0))


def _within_length(
    items: Sequence[Question], texts: Sequence[str], options: Mapping[str, Any]
) -> np.ndarray:
    """0 for an answer longer than the board accepts (it refuses the file), else 1."""
    return np.array([float(len(t) <= MAX_ANSWER_CHARS) for t in texts])


@cache
def spec() -> RewardSpec[Question]:
    return RewardSpec(
        profile="official",
        tasks={
            TASK: TaskReward(
                TASK,
                _correct,
                gated=True,
                about="1 when the official parser reads the key letter, else 0",
                mean_of=("accuracy",),
                guard=_within_length,
            )
        },
        encode_item=encode,
        decode_item=decode,
        prompt=prompt,
        visuals=visuals,
    )
