"""MedVidBench's file shapes: the ground truth (SFT format), the two submission formats, and
the public sample id.

Submission records are decoded into structs that simply have no ``gnd``, ``struc_info`` or
``ground_truth`` fields, so those values never reach the scorer.
"""

from __future__ import annotations

import re

import msgspec

_VIDEO_TAG = re.compile(r"<video>\s*")


# --- ground truth -----------------------------------------------------------------------------


class Turn(msgspec.Struct):
    """One conversation turn: ``{"from": "human"|"gpt", "value": "..."}``."""

    from_: str = msgspec.field(name="from")
    value: str


class GTMetadata(msgspec.Struct):
    """The clip a sample is about; frames and fps arrive as strings in the real data.
    ``recording`` (optional, not in the published files) names the source recording a clip
    was cut from, where several video ids come from one recording: the bootstrap's cluster."""

    video_id: str | int
    fps: str | int | float
    input_video_start_frame: str | int
    input_video_end_frame: str | int
    recording: str | int | None = None


class GTRecord(msgspec.Struct):
    """A ground-truth record exactly as the SFT-style test file stores it."""

    conversations: list[Turn]
    metadata: GTMetadata
    qa_type: str
    struc_info: msgspec.Raw = msgspec.Raw(b"null")
    data_source: str | None = None
    dataset_name: str | None = None


# --- submissions ------------------------------------------------------------------------------


class SubmissionMetadata(msgspec.Struct):
    """Metadata as the inference script copies it into ``results.json``."""

    video_id: str | int
    fps: str | int | float
    input_video_start_frame: str | int
    input_video_end_frame: str | int


class SubmissionRecord(msgspec.Struct):
    """One uploaded prediction, in either submission format.

    Prediction-only records carry ``id`` + ``prediction``; ``results.json`` records carry
    ``metadata`` + ``answer`` (+ ``question``). ``index`` optionally names the test-set
    position explicitly; a record with an ``index`` needs neither id nor qa_type (the files
    ``medvidbench import`` writes). Unknown fields, including any uploaded ground truth, are
    dropped.
    """

    qa_type: str | msgspec.UnsetType = msgspec.UNSET
    prediction: str | msgspec.UnsetType = msgspec.UNSET
    answer: str | msgspec.UnsetType = msgspec.UNSET
    id: str | msgspec.UnsetType = msgspec.UNSET
    index: int | msgspec.UnsetType = msgspec.UNSET
    metadata: SubmissionMetadata | msgspec.UnsetType = msgspec.UNSET
    question: str | msgspec.UnsetType = msgspec.UNSET
    response: str | msgspec.UnsetType = msgspec.UNSET  # the leaderboard README's "format 1"


IGNORED_UPLOAD_FIELDS = ("gnd", "struc_info", "ground_truth")


def sample_id(video_id: object, start: object, end: object, fps: object) -> str:
    """Build the public sample id ``video_id&&start_frame&&end_frame&&fps``.

    Examples:
        >>> sample_id("kcOqlifSukA", "22425", "25124", "1.0")
        'kcOqlifSukA&&22425&&25124&&1.0'
    """
    return f"{video_id}&&{start}&&{end}&&{fps}"


def strip_video_tag(question: str) -> str:
    """Remove the ``<video>`` placeholder the SFT format puts before the question.

    Examples:
        >>> strip_video_tag("<video>\\nWhat comes next?")
        'What comes next?'
    """
    if "<video>" not in question:
        return question.strip()
    return _VIDEO_TAG.sub("", question).strip()
