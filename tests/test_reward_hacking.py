"""Reward hacking: cheap answers a GRPO policy could drift into, and the most each may earn.

Rewards are normalised with statistics fitted on the synthetic weak archetype (the reference
model); a hack's ceiling is stated per attempt (docs/rewards.md, "Cheap answers"). The order
perfect > strong > weak must hold on every task under the same rules.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from medvidbench import benchmarks
from medvidbench.benchmarks.medvidbench.rewards import time_iou
from medvidbench.benchmarks.medvidbench.tasks import dvc, tal
from medvidbench.core.errors import UsageError
from medvidbench.core.evaluation import evaluate
from medvidbench.rewards import Rewarder, Rewards, fit, ground_truth_column, spec_of

MEDVIDBENCH = benchmarks.get("medvidbench")
GENERIC = "The surgeon performs the procedure."


@pytest.fixture(scope="module")
def setup(synthetic: dict[str, Path], synthetic_gt: Any) -> dict[str, Any]:
    gt = synthetic_gt
    cols = [
        ground_truth_column(MEDVIDBENCH, s, e)
        for s, e in zip(gt.samples, spec_of(MEDVIDBENCH).row_extras(gt.samples), strict=True)
    ]
    stats = fit(
        synthetic["weak"], synthetic["ground_truth"], benchmark="medvidbench", min_samples=5
    )
    answers = {
        a: [p or "" for p in MEDVIDBENCH.validate_submission(synthetic[a], gt).predictions]
        for a in ("strong", "weak", "format-noisy")
    }
    answers["perfect"] = [s.answer for s in gt.samples]
    return {"gt": gt, "cols": cols, "stats": stats, "answers": answers}


def members(setup: dict[str, Any], task: str) -> list[int]:
    return [i for i, s in enumerate(setup["gt"].samples) if s.task == task]


def score(rewarder: Rewarder, setup: dict[str, Any], idx: list[int], texts: list[str]) -> Rewards:
    return rewarder.score(texts, [setup["cols"][i] for i in idx])


def clip_end(item: Any) -> float:
    return max(e[1] for e in dvc.truth(item.structure()))


# (task, answer from the item, ceiling): the ceiling is a fraction of the weak reference's mean
# reward on the same rows (1.0: must stay below the reference) or, with "abs", an absolute value.
HACKS: dict[str, tuple[str, Callable[[Any], str], str, float]] = {
    "dvc: one generic whole-clip event": (
        "dense_captioning",
        lambda s: f"0.0-{clip_end(s):.1f} seconds: {GENERIC}",
        "weak",
        1.0,
    ),
    "dvc: the question copied": ("dense_captioning", lambda s: s.question, "abs", 0.0),
    "tal: one whole-clip segment": (
        "tal",
        lambda s: f"0.0-{1.5 * max(e[1] for e in tal.truth(s.structure())):.1f} seconds.",
        "weak",
        1.0,
    ),
    "tal: the reference segments repeated 5 times": (
        "tal",
        lambda s: " ".join([s.answer] * 5),
        "weak",
        1.0,
    ),
    "tal: the question copied": ("tal", lambda s: s.question, "abs", 0.0),
    "nap: the question copied (every class)": ("next_action", lambda s: s.question, "abs", 0.0),
    "nap: every class listed": (
        "next_action",
        lambda s: ", ".join(spec_classes(s)),
        "abs",
        0.0,
    ),
    "vs: the question copied": ("video_summary", lambda s: s.question, "weak", 0.5),
    "vs: a generic sentence": ("video_summary", lambda s: GENERIC, "weak", 1.0),
    "vs: the reference 20 times (very long)": (
        "video_summary",
        lambda s: " ".join([s.answer] * 20),
        "weak",
        1.0,
    ),
    "rc: the question copied": ("region_caption", lambda s: s.question, "weak", 0.5),
    "rc: a generic sentence": ("region_caption", lambda s: GENERIC, "weak", 1.0),
    "rc: the question restated, nothing more": (
        "region_caption",
        lambda s: f"{_asked_span(s)}, the object in the region given by the bounding box is busy.",
        "weak",
        1.0,
    ),
    "dvc: two equal events, one generic caption": (
        "dense_captioning",
        lambda s: _equal_events(s, 2),
        "weak",
        1.0,
    ),
    "dvc: three equal events, one generic caption": (
        "dense_captioning",
        lambda s: _equal_events(s, 3),
        "weak",
        1.0,
    ),
    "nap: every label of the rows' label set (EgoSurgery too)": (
        "next_action",
        lambda s: "",  # filled in by the test from the row's own label set
        "abs",
        0.0,
    ),
}


def _asked_span(item: Any) -> str:
    """The question's "From X seconds to Y seconds" part, as a model echoing it writes it."""
    import re

    found = re.search(r"From [\d.]+ seconds to [\d.]+ seconds", item.question)
    return found.group() if found else "From the start to the end"


def _equal_events(item: Any, parts: int) -> str:
    end = clip_end(item)
    cuts = [end * k / parts for k in range(parts + 1)]
    return "\n".join(f"{a:.1f}-{b:.1f} seconds: {GENERIC}" for a, b in itertools.pairwise(cuts))


def spec_classes(item: Any) -> list[str]:
    from medvidbench.benchmarks.medvidbench.rewards import _classes_of

    return _classes_of(item)


@pytest.mark.parametrize("name", list(HACKS))
def test_each_cheap_answer_stays_under_its_ceiling(name: str, setup: dict[str, Any]) -> None:
    task, make, kind, ceiling = HACKS[name]
    idx = members(setup, task)
    if name.startswith("nap"):  # where the class list is known (not EgoSurgery: docs)
        idx = [i for i in idx if len(spec_classes(setup["gt"].samples[i])) >= 2]
    rewarder = Rewarder(setup["stats"])
    texts = [make(setup["gt"].samples[i]) for i in idx]
    if name.startswith("nap: every label of the rows'"):
        idx = members(setup, task)  # every row, its dataset's label set carried by the row
        texts = [", ".join(_labels_of(setup, i)) for i in idx]
    hack = score(rewarder, setup, idx, texts)
    if kind == "abs":
        assert float(hack.reward.max()) <= ceiling, name
    else:
        weak = score(rewarder, setup, idx, [setup["answers"]["weak"][i] for i in idx])
        assert float(hack.reward.mean()) < ceiling * float(weak.reward.mean()), name


def _labels_of(setup: dict[str, Any], i: int) -> list[str]:
    """The classes a row's reward knows: its carried label set, else the shipped list."""
    carried = json.loads(setup["cols"][i])["item"].get("label_set")
    return list(carried) if carried else spec_classes(setup["gt"].samples[i])


def test_the_egosurgery_rows_carry_their_label_set() -> None:
    """The all-labels guard needs the class list where no list ships (issue #35): the rows of
    such a dataset carry it, and a row of one is among the synthetic set's."""
    from medvidbench.benchmarks.medvidbench.rewards import row_extras

    samples = [s for s in load_ground_truth_demo() if s.task == "next_action"]
    extras = row_extras(samples)
    carried = {s.dataset for s, e in zip(samples, extras, strict=True) if e.get("label_set")}
    assert "EgoSurgery" in carried


def load_ground_truth_demo() -> list[Any]:
    import tempfile

    from medvidbench.benchmarks.medvidbench.groundtruth import load_ground_truth
    from medvidbench.benchmarks.medvidbench.synth import write_synthetic

    files = write_synthetic(Path(tempfile.mkdtemp()), samples=1200, seed=3)
    return list(load_ground_truth(files["ground_truth"]).samples)


def test_a_correct_answer_that_restates_the_question_keeps_its_reward(
    setup: dict[str, Any],
) -> None:
    """VLMs restate the question before answering: the reference preceded by the question's
    time span and subject earns at least 0.9 of what the reference itself earns (it earned
    0.397 against 1.0 before), while the restatement alone earns nothing beyond the weak
    model's (the HACKS above)."""
    idx = members(setup, "region_caption")
    rewarder = Rewarder(setup["stats"])
    items = [setup["gt"].samples[i] for i in idx]
    plain = score(rewarder, setup, idx, [s.answer for s in items])
    echoed = score(
        rewarder,
        setup,
        idx,
        [
            f"{_asked_span(s)}, the object in the region given by the bounding box: {s.answer}"
            for s in items
        ],
    )
    assert float(echoed.reward.mean()) >= 0.9 * float(plain.reward.mean())
    similarity = echoed.terms["similarity"], plain.terms["similarity"]
    assert float(similarity[0].mean()) >= 0.9 * float(similarity[1].mean())


def test_repeated_dvc_events_count_once(setup: dict[str, Any]) -> None:
    """The reference's events repeated 3 times read as the reference (identical events are
    one event), so it earns what the reference earns and no more."""
    idx = members(setup, "dense_captioning")
    rewarder = Rewarder(setup["stats"])
    perfect = score(rewarder, setup, idx, [setup["gt"].samples[i].answer for i in idx])
    tripled = score(
        rewarder, setup, idx, ["\n".join([setup["gt"].samples[i].answer] * 3) for i in idx]
    )
    np.testing.assert_allclose(tripled.reward, perfect.reward)


@pytest.mark.parametrize("junk", ["", "   ", "???", "-- !! --"])
def test_unreadable_answers_earn_zero_on_every_task_once_normalised(
    junk: str, setup: dict[str, Any]
) -> None:
    out = Rewarder(setup["stats"]).score([junk] * len(setup["cols"]), setup["cols"])
    assert (out.reward == 0.0).all(), sorted(set(np.array(out.task)[out.reward > 0]))


def test_perfect_beats_strong_beats_weak_on_every_task(setup: dict[str, Any]) -> None:
    rewarder = Rewarder(setup["stats"])
    means = {}
    for who in ("perfect", "strong", "weak"):
        out = rewarder.score(setup["answers"][who], setup["cols"])
        means[who] = {
            t: float(np.mean(out.reward[[i for i, x in enumerate(out.task) if x == t]]))
            for t in set(out.task)
        }
    for task in means["weak"]:
        assert means["perfect"][task] > means["strong"][task] > means["weak"][task], task


# --- format-aware rewards ---------------------------------------------------------------------


def test_format_drift_costs_reward_where_the_board_reads_strictly(
    synthetic: dict[str, Path], setup: dict[str, Any]
) -> None:
    board = {
        a: evaluate(MEDVIDBENCH, synthetic[a], setup["gt"], "leaderboard-v1").metrics
        for a in ("strong", "format-noisy")
    }
    assert board["format-noisy"]["stg_miou"] < 0.1 < board["strong"]["stg_miou"]
    idx = members(setup, "stg") + members(setup, "tal")
    cols = [setup["cols"][i] for i in idx]
    aware = Rewarder(setup["stats"])  # on by default for MedVidBench
    lenient = Rewarder(setup["stats"], board_format=False)
    noisy = [setup["answers"]["format-noisy"][i] for i in idx]
    strong = [setup["answers"]["strong"][i] for i in idx]
    for task in ("stg", "tal"):
        rows = [n for n, i in enumerate(idx) if setup["gt"].samples[i].task == task]
        off_noisy = lenient.score(noisy, cols).reward[rows].mean()
        off_strong = lenient.score(strong, cols).reward[rows].mean()
        assert off_noisy == pytest.approx(off_strong, abs=0.01), task  # drift was free
        on_noisy = aware.score(noisy, cols).reward[rows].mean()
        on_strong = aware.score(strong, cols).reward[rows].mean()
        assert on_strong == pytest.approx(off_strong, abs=0.01), task  # honest answers keep it
        assert on_noisy < 0.5 * on_strong, task


# --- TAL's continuous IoU ---------------------------------------------------------------------


def test_time_iou_is_continuous_and_ignores_repeats() -> None:
    assert time_iou([(0, 10)], [(0, 10)]) == 1.0
    assert time_iou([(0, 10)], [(0, 10), (0, 10), (2, 5)]) == 1.0
    assert time_iou([(0, 10)], [(5, 15)]) == pytest.approx(5 / 15)
    assert time_iou([(0, 10)], [(0, 9)]) > time_iou([(0, 10)], [(0, 8)])
    assert time_iou([(0, 10)], []) == 0.0


def test_tal_iou_variant_is_fitted_and_checked(
    synthetic: dict[str, Path], setup: dict[str, Any]
) -> None:
    idx = members(setup, "tal")
    stats = fit(
        synthetic["weak"],
        synthetic["ground_truth"],
        benchmark="medvidbench",
        min_samples=5,
        variants={"tal": "iou"},
    )
    assert stats.provenance["variants"] == {"tal": "iou"}
    rewarder = Rewarder(stats, variants={"tal": "iou"})
    gt = setup["gt"].samples
    out = score(rewarder, setup, idx, [gt[i].answer for i in idx])
    np.testing.assert_allclose(out.terms["score"], 1.0)
    whole = score(
        rewarder,
        setup,
        idx,
        [f"0.0-{2 * max(e[1] for e in tal.truth(gt[i].structure())):.1f} seconds" for i in idx],
    )
    assert float(whole.terms["score"].max()) <= 0.5 + 1e-9  # at most half the marked time
    with pytest.raises(UsageError, match="reward variants"):
        Rewarder(setup["stats"], variants={"tal": "iou"})
    with pytest.raises(UsageError, match="reward variants"):
        Rewarder(stats)
    with pytest.raises(UsageError, match="no reward variant"):
        Rewarder(variants={"tal": "dice"}).score([gt[idx[0]].answer], [setup["cols"][idx[0]]])
