"""The MedVidBench task for lmms-eval: ``medvidbench.yaml`` and ``utils.py``, the files that
``medvidbench export-task lmms-eval DIR`` copies (with the questions as JSONL) for lmms-eval's
``--include_path DIR``. ``utils.py`` needs only the standard library (and Pillow for frame
lists), so it runs in lmms-eval's environment whether or not medvidbench is installed there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

QUESTIONS_FILE = "medvidbench_questions.jsonl"
_MARKER = "__QUESTIONS_JSONL__"


def task_files(questions: Sequence[Mapping[str, Any]] | None, folder: Path) -> dict[str, bytes]:
    """The task's files for ``folder``: ``medvidbench.yaml`` (reading the questions from
    ``folder``), ``utils.py`` and, given the test file's records, the questions as JSONL.

    Every field of a question line has one type in every line, as the JSON loader of
    Hugging Face ``datasets`` (which lmms-eval uses) requires.
    """
    from medvidbench.benchmarks.medvidbench.importers import question_view

    here = resources.files(__package__)
    data_path = json.dumps(str((folder / QUESTIONS_FILE).resolve()))
    files = {
        "medvidbench.yaml": here.joinpath("medvidbench.yaml")
        .read_text(encoding="utf-8")
        .replace(_MARKER, data_path)
        .encode(),
        "utils.py": here.joinpath("utils.py").read_bytes(),
    }
    if questions is not None:
        lines = []
        for q, rec in zip(question_view(questions), questions, strict=True):
            video = rec.get("video")
            frames = [str(f) for f in video] if isinstance(video, list) else []
            doc = {
                "index": q.index,
                "id": q.sample_id,
                "qa_type": q.qa_type,
                "question": q.asked,
                "video": video if isinstance(video, str) else "",
                "frames": frames,
            }
            lines.append(json.dumps(doc, ensure_ascii=False))
        files[QUESTIONS_FILE] = ("\n".join(lines) + "\n").encode()
    return files
