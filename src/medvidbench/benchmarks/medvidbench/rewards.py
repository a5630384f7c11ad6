"""MedVidBench's eight tasks as training rewards (docs/rewards.md).

Every raw reward comes from the per-sample values the task's scorer produces under
``strict-v2``, where an unreadable answer scores 0 instead of being skipped:

* TAL: the mean of the sample's two strict-v2 Jaccard values (IoU 0.3 and 0.5); gated by format.
* STG: the sample's mean box IoU; gated.
* NAP: 1 when the answer's class is the reference's, else 0.
* DVC: the sample's temporal F1 (gated), and the caption part: per IoU threshold, each optimally
  matched event pair contributes its caption similarity and every missed or invented event 0,
  as strict-v2's DVC_llm counts them; the judge term is the strict-v2 DVC_llm sample score.
* VS, RC: the whole answer's similarity to the reference; the judge term is the strict-v2
  five-aspect mean.
* SA, CVS: the fraction of the sample's aspects (components) answered correctly. The board's
  SA_acc and CVS_acc balance accuracies over aspects and datasets, so they are not the mean of
  this reward.

A training row's ground truth is the item itself (``encode``/``decode``), not the SFT record:
the scorers read nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import msgspec
import numpy as np

from medvidbench.benchmarks.medvidbench.datasets import canonical_dataset
from medvidbench.benchmarks.medvidbench.groundtruth import Sample
from medvidbench.benchmarks.medvidbench.tasks import dvc, nap, tal
from medvidbench.benchmarks.medvidbench.tasks.captions import strict_matches
from medvidbench.benchmarks.medvidbench.tasks.registry import task_for_qa_type
from medvidbench.core.rewards import RewardSpec, TaskReward
from medvidbench.core.scoring import SampleResult

_WORD = re.compile(r"[^\W_]")  # a letter or digit
# NAP class lists a test set derives from its own labels (nap.class_list's last branch).
_SHIPPED_NAP_LISTS = ("AVOS", "CholecT50", "CoPESD", "NurViD")


class RewardItem(msgspec.Struct, forbid_unknown_fields=True):
    """A training row's ground-truth column (JSON)."""

    qa_type: str
    dataset: str
    fps: float
    question: str
    answer: str
    struc_info: Any = None
    id: str = ""
    label_set: list[str] | None = None


def encode(item: Sample, extras: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "qa_type": item.qa_type,
        "dataset": item.dataset,
        "fps": item.fps,
        "question": item.question,
        "answer": item.answer,
        "struc_info": msgspec.json.decode(item.struc_info),
        "id": item.sample_id,
    }
    if extras.get("label_set") is not None:
        out["label_set"] = list(extras["label_set"])
    return out


def decode(data: Mapping[str, Any]) -> tuple[Sample, dict[str, Any]]:
    try:
        rec = msgspec.convert(data, RewardItem)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc)) from None
    task = task_for_qa_type(rec.qa_type)
    if task is None:
        raise ValueError(f"unknown qa_type {rec.qa_type!r}")
    dataset = canonical_dataset(rec.dataset)
    if dataset is None:
        raise ValueError(f"unknown dataset {rec.dataset!r}")
    if not (rec.fps > 0 and np.isfinite(rec.fps)):
        raise ValueError(f"fps must be a positive number; got {rec.fps!r}")
    sample = Sample(
        0,
        rec.id,
        rec.qa_type,
        task,
        dataset,
        rec.fps,
        rec.question,
        rec.answer,
        msgspec.json.encode(rec.struc_info),
    )
    return sample, ({"label_set": rec.label_set} if rec.label_set is not None else {})


def row_extras(items: Sequence[Sample]) -> list[dict[str, Any]]:
    """NAP rows of a dataset whose class list comes from the labels carry the file's labels."""
    labels: dict[str, set[str]] = {}
    for s in items:
        if s.task == "next_action" and s.dataset not in _SHIPPED_NAP_LISTS:
            labels.setdefault(s.dataset, set()).add(s.answer)
    sets = {d: sorted(v) for d, v in labels.items()}
    return [
        {"label_set": sets[s.dataset]} if s.task == "next_action" and s.dataset in sets else {}
        for s in items
    ]


def batch_options(items: Sequence[Sample], extras: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The scorers' options for a batch: the label sets its NAP rows carry, by dataset."""
    out: dict[str, set[str]] = {}
    for item, e in zip(items, extras, strict=True):
        if e.get("label_set") is not None:
            out.setdefault(item.dataset, set()).update(e["label_set"])
    return {"label_sets": {d: sorted(v) for d, v in out.items()}}


def prompt(item: Sample) -> dict[str, Any]:
    video, start, end, fps = [*item.sample_id.split("&&"), "", "", "", ""][:4]
    return {
        "question": item.question,
        "media": {"video_id": video, "start_frame": start, "end_frame": end, "fps": fps},
    }


def visuals(item: Sample, record: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The clip as the training file's record names it, with its time axis in the keys
    qwen-vl-utils reads (verl hands the entry to its ``fetch_video``): frame files as
    ``{"video": [frames], "sample_fps": F}``, F the rate they were sampled at (``metadata.fps``:
    without it a frame list is read at 2 frames a second, and every answer in seconds is off
    by 2/F); a video file as ``{"video": path, "fps": F}``, sampled at the clip's own rate, with
    ``video_start``/``video_end`` (seconds) when the record gives the clip's times
    (``metadata.input_video_start_time``/``_end_time``): otherwise the whole file is read, so
    it must be the clip. Nothing when the record names no video."""
    video = record.get("video")
    if isinstance(video, str) and video:
        clip: dict[str, Any] = {"video": video, "fps": item.fps}
        meta = record.get("metadata")
        times = _clip_times(meta) if isinstance(meta, Mapping) else None
        if times is not None:
            clip["video_start"], clip["video_end"] = times
        return {"images": [], "videos": [clip]}
    if isinstance(video, list) and video and all(isinstance(f, str) for f in video):
        return {"images": [], "videos": [{"video": list(video), "sample_fps": item.fps}]}
    return {"images": [], "videos": []}


def _clip_times(meta: Mapping[str, Any]) -> tuple[float, float] | None:
    """The clip's start and end in seconds of its video file, when the record gives both."""
    try:
        start = float(meta["input_video_start_time"])
        end = float(meta["input_video_end_time"])
    except (KeyError, TypeError, ValueError):
        return None
    return (start, end) if 0 <= start < end < float("inf") else None


# --- the rule-based terms ---------------------------------------------------------------------


def _values(r: SampleResult) -> dict[str, float]:
    return r.values or {}


def _tal(r: SampleResult) -> float:
    v = _values(r)
    return (v.get("tag_miou_03", 0.0) + v.get("tag_miou_05", 0.0)) / 2


def _key(key: str) -> Any:
    def score(r: SampleResult) -> float:
        return float(_values(r).get(key, 0.0))

    score.__name__ = f"score_{key}"
    return score


def _fraction(prefix: str, fallback: str) -> Any:
    def score(r: SampleResult) -> float:
        v = _values(r)
        parts = [x for k, x in v.items() if k.startswith(prefix)]
        return sum(parts) / len(parts) if parts else float(v.get(fallback, 0.0))

    return score


def _union(segments: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted((min(a, b), max(a, b)) for a, b in segments):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _length(segments: Sequence[tuple[float, float]]) -> float:
    return sum(b - a for a, b in segments)


def time_iou(gt: Sequence[tuple[float, float]], pred: Sequence[tuple[float, float]]) -> float:
    """IoU of the time the answer marks with the time the reference marks (both as unions of
    segments): continuous, and repeating or splitting a segment earns nothing more."""
    g, p = _union(gt), _union(pred)
    inter = sum(max(0.0, min(b, d) - max(a, c)) for a, b in g for c, d in p)
    union = _length(g) + _length(p) - inter
    return inter / union if union > 0 else 0.0


def _tal_iou(
    items: Sequence[Sample], texts: Sequence[str], results: Sequence[SampleResult]
) -> np.ndarray:
    """TAL's optional continuous reward (``variants={"tal": "iou"}``): :func:`time_iou` of the
    strict-v2 reading of the answer, 0 for an unreadable one."""
    return np.array(
        [
            time_iou(tal.truth(item.structure()), tal.parse(text, strict=True)) if r.parsed else 0.0
            for item, text, r in zip(items, texts, results, strict=True)
        ]
    )


# --- cheap-answer guards ----------------------------------------------------------------------

HEDGE_CLASSES = 2  # a NAP answer naming this many of its classes or more earns nothing
LENGTH_RATIO = 3.0  # a caption longer than this many times its reference is scaled down
LENGTH_FLOOR = 40  # words: below this, no caption is too long
WHOLE_CLIP = 0.9  # a single DVC event covering this much of the clip or more


def _nap_guard(
    items: Sequence[Sample], texts: Sequence[str], options: Mapping[str, Any]
) -> np.ndarray:
    """0 for an answer that names two or more of the item's classes (a hedge that lists the
    options, such as a copied question), else 1. The classes are the shipped list, or, for a
    dataset whose list comes from its labels (EgoSurgery), the label set the rows carry."""
    out = np.ones(len(items))
    label_sets = options.get("label_sets") or {}
    for n, (item, text) in enumerate(zip(items, texts, strict=True)):
        answer = nap.normalize(str(text), True)
        listed = label_sets.get(item.dataset) or _classes_of(item)
        classes = {nap.normalize(c, True) for c in listed}
        named = [c for c in classes if c and c in answer]
        named = [c for c in named if not any(c != o and c in o for o in named)]
        if len(named) >= HEDGE_CLASSES:
            out[n] = 0.0
    return out


def _classes_of(item: Sample) -> list[str]:
    key = nap.group_key(item.dataset, item.question, True)
    try:
        return list(nap.class_list(key, [item.answer]))
    except (KeyError, ValueError):
        return [item.answer]


def _length_guard(
    items: Sequence[Sample], texts: Sequence[str], options: Mapping[str, Any] | None = None
) -> np.ndarray:
    """``LENGTH_RATIO * reference words / answer words`` (at most 1) for a caption padded far
    beyond its reference's length; 1 up to ``LENGTH_FLOOR`` words."""
    out = np.ones(len(items))
    for n, (item, text) in enumerate(zip(items, texts, strict=True)):
        words = len(str(text).split())
        allowed = max(LENGTH_FLOOR, LENGTH_RATIO * len(item.answer.split()))
        if words > allowed:
            out[n] = allowed / words
    return out


def _dvc_guard(
    items: Sequence[Sample], texts: Sequence[str], options: Mapping[str, Any] | None = None
) -> np.ndarray:
    """The clip covered by events that all say the same thing (one whole-clip event, or the
    clip cut into equal parts under one caption), where the reference has several events, is
    the trivial answer: 0; else the caption length guard."""
    out = _length_guard(items, texts)
    for n, (item, text) in enumerate(zip(items, texts, strict=True)):
        gt, pred = dvc.truth(item.structure()), dvc.parse(str(text), strict=True)
        captions = {" ".join(str(e[2]).lower().split()) for e in pred}
        if len(gt) >= 2 and pred and len(captions) == 1:
            first, last = min(e[0] for e in gt), max(e[1] for e in gt)
            marked = _union([(max(a, first), min(b, last)) for a, b, *_ in pred if b > first])
            if last > first and _length(marked) / (last - first) >= WHOLE_CLIP:
                out[n] = 0.0
    return out


# --- the caption similarity terms -------------------------------------------------------------


def beyond_question(to_reference: np.ndarray, to_question: np.ndarray) -> np.ndarray:
    """The part of an answer's similarity to its reference that the question does not already
    give: ``(cos(a, ref) - cos(a, q)) / (1 - cos(a, q))`` clipped to 0-1. A copied question and
    a generic sentence as close to the question as to the reference earn 0; the reference
    itself 1."""
    q = np.clip(to_question, 0.0, 1.0 - 1e-6)
    out: np.ndarray = np.clip((to_reference - q) / (1.0 - q), 0.0, 1.0)
    return out


ECHO_WORDS = 4  # a run of this many words or more of the question, repeated in an answer
BRIDGE_WORDS = 3  # at most this many words between two such runs (or before the first) go too
_WORDS = re.compile(r"[^\W_]+(?:[.,'][^\W_]+)*")  # words and numbers such as 10.0


def without_echo(text: str, question: str) -> str:
    """``text`` without the runs of :data:`ECHO_WORDS` or more consecutive words (case and
    punctuation aside) that the question also holds, nor the few words (:data:`BRIDGE_WORDS`)
    that join such runs or come before the first: a model restating the question ("From 0.0
    to 10.0 seconds, the object in the region given by the bounding box ...") before its
    answer is judged on the answer. ``text`` itself when it repeats no such run.

    Examples:
        >>> without_echo("From 0.0 to 9.0 seconds, the pen cuts.", "What, from 0.0 to 9.0 seconds?")
        'the pen cuts.'
    """
    asked = [w.lower() for w in _WORDS.findall(question)]
    runs = {tuple(asked[i : i + ECHO_WORDS]) for i in range(len(asked) - ECHO_WORDS + 1)}
    words = list(_WORDS.finditer(text))
    said = [m.group().lower() for m in words]
    echoed = [False] * len(words)
    for i in range(len(words) - ECHO_WORDS + 1):
        if tuple(said[i : i + ECHO_WORDS]) in runs:
            echoed[i : i + ECHO_WORDS] = [True] * ECHO_WORDS
    if not any(echoed):
        return text
    # a few words bridging two runs of the echo, or before its first ("the object" in "From 0.0
    # to 9.0 seconds, the object in the region given by ..."), belong to the restatement
    n = 0
    while n < len(words):
        if echoed[n]:
            n += 1
            continue
        end = n
        while end < len(words) and not echoed[end]:
            end += 1
        if end < len(words) and end - n <= BRIDGE_WORDS:
            echoed[n:end] = [True] * (end - n)
        n = end
    kept, at = [], 0
    for m, gone in zip(words, echoed, strict=True):
        if gone:
            kept.append(text[at : m.start()])
            at = m.end()
    kept.append(text[at:])
    # the echo's own punctuation goes with it
    return " ".join(re.sub(r"^[\s,.;:!?-]+", "", "".join(kept)).split())


def _whole_similarity(items: Sequence[Sample], texts: Sequence[str], embedder: Any) -> np.ndarray:
    """Each answer's similarity to its reference beyond the question (:func:`beyond_question`),
    the question's words it restates left out of both (:func:`without_echo`): a restated
    question says nothing, and the rest is the answer; an answer without a letter or digit
    (blank, punctuation), or with nothing left, 0."""
    out = np.zeros(len(items))
    answers = [without_echo(str(t), items[i].question) for i, t in enumerate(texts)]
    references = [without_echo(item.answer, item.question) for item in items]
    todo = [i for i, t in enumerate(answers) if _WORD.search(t) and references[i].strip()]
    if todo:
        a = embedder.encode([answers[i] for i in todo])
        b = embedder.encode([references[i] for i in todo])
        q = embedder.encode([items[i].question for i in todo])
        out[todo] = beyond_question((a * b).sum(axis=1), (a * q).sum(axis=1))
    return out


def _event_similarity(items: Sequence[Sample], texts: Sequence[str], embedder: Any) -> np.ndarray:
    """DVC: per threshold, the events strict-v2's DVC_llm matches (:func:`strict_matches`), each
    pair contributing its captions' similarity and each missed or invented event 0."""
    plans = []
    captions: set[str] = set()
    for item, text in zip(items, texts, strict=True):
        gt, pred = dvc.truth(item.structure()), dvc.parse(text, strict=True)
        per_theta = []
        for theta in dvc.THRESHOLDS:
            pairs, unmatched = strict_matches(pred, gt, theta)
            per_theta.append((pairs, unmatched))
            for i, j in pairs:
                captions.update((pred[i][2], gt[j][2]))
        plans.append((gt, pred, per_theta))
    captions.update(item.question for item in items)
    ordered = sorted(captions)
    vectors = dict(zip(ordered, embedder.encode(ordered), strict=True)) if ordered else {}
    out = np.zeros(len(items))
    for n, (gt, pred, per_theta) in enumerate(plans):
        if not gt:
            continue
        question = vectors[items[n].question]
        means = []
        for pairs, unmatched in per_theta:
            sims = [
                float(
                    beyond_question(
                        np.asarray(vectors[pred[i][2]] @ vectors[gt[j][2]]),
                        np.asarray(vectors[pred[i][2]] @ question),
                    )
                )
                for i, j in pairs
            ]
            total = len(sims) + unmatched
            means.append(sum(sims) / total if total else 0.0)
        out[n] = sum(means) / len(means)
    return out


TASK_REWARDS: dict[str, TaskReward] = {
    t.task: t
    for t in (
        TaskReward(
            "tal",
            _tal,
            gated=True,
            about="mean of the strict-v2 Jaccard at IoU 0.3 and 0.5",
            mean_of=("tag_miou_03", "tag_miou_05"),
            variants={"iou": _tal_iou},
        ),
        TaskReward(
            "stg",
            _key("stg_miou"),
            gated=True,
            about="mean box IoU over the GT frames",
            mean_of=("stg_miou",),
        ),
        TaskReward(
            "next_action",
            _key("nap_acc"),
            about="1 for the reference's class, else 0",
            mean_of=("nap_acc",),
            guard=_nap_guard,
        ),
        TaskReward(
            "dense_captioning",
            _key("dvc_f1"),
            gated=True,
            similarity=_event_similarity,
            judged=True,
            about="temporal F1 over tIoU 0.3/0.5/0.7",
            mean_of=("dvc_f1",),
            guard=_dvc_guard,
        ),
        TaskReward("video_summary", similarity=_whole_similarity, judged=True, guard=_length_guard),
        TaskReward(
            "region_caption", similarity=_whole_similarity, judged=True, guard=_length_guard
        ),
        TaskReward(
            "skill_assessment",
            _fraction("aspect:", "level"),
            about="fraction of the GT's aspects scored correctly",
        ),
        TaskReward(
            "cvs_assessment",
            _fraction("comp:", "rating"),
            about="fraction of the three CVS components answered correctly",
        ),
    )
}


@cache
def spec() -> RewardSpec[Sample]:
    return RewardSpec(
        profile="strict-v2",
        tasks=TASK_REWARDS,
        encode_item=encode,
        decode_item=decode,
        batch_options=batch_options,
        row_extras=row_extras,
        prompt=prompt,
        visuals=visuals,
        board_format=True,
    )
