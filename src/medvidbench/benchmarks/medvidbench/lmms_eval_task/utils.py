"""lmms-eval hooks of the MedVidBench task (named in ``medvidbench.yaml``; lmms-eval's task
files are a YAML and a ``utils.py`` beside it).

Each document is one line of ``medvidbench_questions.jsonl``: ``index`` (the question's
position in the MedVidBench test file), ``id``, ``qa_type``, ``question``, and the clip as the
test file names it: ``video`` (a video file) or ``frames`` (its frame files).
``process_results`` keeps the model's answer with the question's identity; the aggregation
writes every answer, in test-file order, as a submission file that ``medvidbench evaluate``
and the leaderboard server take as it is. Nothing is scored here: the test answers are not in
the task's data.

Relative video paths are read under ``$MEDVIDBENCH_VIDEO_DIR`` (default: the current folder).
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
from typing import Any

SUBMISSION_METRIC = "medvidbench_submission"


def _video_dir() -> str:
    return os.environ.get("MEDVIDBENCH_VIDEO_DIR", "")


def medvidbench_doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The clip: its frames as RGB images when the test file lists frames, else ``[path]`` of
    its video file (nothing when the test file names neither)."""
    frames = [os.path.join(_video_dir(), f) for f in doc.get("frames") or []]
    if frames:
        image = importlib.import_module("PIL.Image")  # only frame lists need Pillow
        return [image.open(f).convert("RGB") for f in frames]
    video = doc.get("video") or ""
    return [os.path.join(_video_dir(), video)] if video else []


def medvidbench_doc_to_text(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> str:
    """The question as the test file asks it, between the model's optional pre/post prompt."""
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt', '')}{doc['question']}{kwargs.get('post_prompt', '')}"


def medvidbench_doc_to_target(doc: dict[str, Any]) -> str:
    """No reference answer: the test answers stay with whoever scores the submission."""
    return ""


def medvidbench_process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """One submission record: the question's test-file position and identity, and the answer
    (the first response; lmms-eval passes one per request)."""
    answer = results[0] if results else ""
    while isinstance(answer, list):  # repeats: the first
        answer = answer[0] if answer else ""
    record = {
        "index": int(doc["index"]),
        "id": doc["id"],
        "qa_type": doc["qa_type"],
        "prediction": answer if isinstance(answer, str) else str(answer),
    }
    return {SUBMISSION_METRIC: record}


def submission_path(args: Any, now: datetime.datetime | None = None) -> str:
    """Where the submission goes: ``<output_path>/submissions/medvidbench-submission-<time>.json``
    (the current folder without ``--output_path``), as lmms-eval's submission tasks do."""
    stamp = (now or datetime.datetime.now()).strftime("%Y-%m-%d-%H-%M-%S")
    base = getattr(args, "output_path", None) if args is not None else None
    folder = os.path.join(base, "submissions") if base else "submissions"
    os.makedirs(folder, exist_ok=True)
    return os.path.abspath(os.path.join(folder, f"medvidbench-submission-{stamp}.json"))


def medvidbench_aggregate_submission(results: list[dict[str, Any]], args: Any = None) -> None:
    """Write every answer, sorted by test-file position (the ranks' answers arrive one rank
    after another), as a MedVidBench submission file."""
    records = sorted(results, key=lambda r: int(r["index"]))
    path = submission_path(args)
    with open(path, "w", encoding="utf-8") as out:
        json.dump(records, out, ensure_ascii=False, indent=1)
    print(f"MedVidBench submission ({len(records)} answers) written to {path}")
