"""Shared fixtures: a small hand-made test set and a synthetic one written to disk once."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth, load_ground_truth
from medvidbench.benchmarks.medvidbench.synth import write_synthetic

# The suite runs in parallel processes (pytest-xdist, the README's command) on a machine of few
# cores: OpenBLAS's default of one spinning thread per core in every one of them made the
# in-process scoring several times slower. Set before numpy loads; the workers inherit it, and
# the tests of this very default clear it for themselves.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@pytest.fixture(scope="session", autouse=True)
def private_model_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The suite's own model cache (weights layout, label embeddings), never the user's: one
    for the run, shared by its parallel workers (every entry is written atomically)."""
    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = run / "model-cache"
    folder.mkdir(exist_ok=True)
    os.environ["MEDVIDBENCH_CACHE_DIR"] = str(folder)


def gt_record(
    video_id: str = "kcOqlifSukA",
    qa_type: str = "tal",
    question: str = "Find the segment(s) where tying happens.",
    answer: str = "1.0-2.0 seconds.",
    data_source: str = "AVOS",
    struc_info: Any = None,
    fps: str = "1.0",
    start: str = "22425",
    end: str = "25124",
) -> dict[str, Any]:
    """One ground-truth record in the real SFT-style format."""
    return {
        "conversations": [
            {"from": "human", "value": "<video>\n" + question},
            {"from": "gpt", "value": answer},
        ],
        "metadata": {
            "video_id": video_id,
            "fps": fps,
            "input_video_start_frame": start,
            "input_video_end_frame": end,
        },
        "qa_type": qa_type,
        "struc_info": struc_info if struc_info is not None else [],
        "data_source": data_source,
    }


def small_records() -> list[dict[str, Any]]:
    """Five samples over three tasks; clip 'kcOqlifSukA' has two TAL questions."""
    return [
        gt_record(question="Find the segment(s) where tying happens."),
        gt_record(question="Find the segment(s) where cutting happens.", answer="5.0-9.0 seconds."),
        gt_record(
            video_id="VsKw5d-4rq8",
            qa_type="stg",
            answer="1.0 seconds: [0, 0, 10, 10]",
            start="13561",
            end="16184",
        ),
        gt_record(
            video_id="nurvid_1",
            qa_type="dense_captioning_gpt",
            data_source="NurViD",
            answer="0.0-10.0 seconds: check: The nurse checks.",
        ),
        gt_record(
            video_id="nurvid_1",
            qa_type="dense_captioning_gemini",
            data_source="NurViD",
            answer="0.0-5.0 seconds: check: The nurse checks.",
            fps="0.5",
        ),
    ]


@pytest.fixture
def small_gt() -> GroundTruth:
    return load_ground_truth(json.dumps(small_records()).encode())


@pytest.fixture(scope="session")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 600-sample synthetic MedVidBench with every archetype's predictions."""
    return write_synthetic(tmp_path_factory.mktemp("synth"), samples=600, seed=7)


@pytest.fixture(scope="session")
def synthetic_gt(synthetic: dict[str, Path]) -> GroundTruth:
    return load_ground_truth(synthetic["ground_truth"])
