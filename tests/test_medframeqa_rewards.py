"""MedFrameQA as a training reward: the board's official reading, the official prompt, rows that
carry the question whole, and the TRL and verl entry points on its rows."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from medvidbench import benchmarks
from medvidbench.benchmarks.medframeqa.rewards import INSTRUCTION, question_text
from medvidbench.library import evaluate
from medvidbench.rewards import Rewarder, RewardInputError, fit, ground_truth_column, spec_of
from medvidbench.rewards.verl import compute_score

BENCH = benchmarks.get("medframeqa")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    assert BENCH.demo is not None
    return BENCH.demo.synthesise(tmp_path_factory.mktemp("mfqa"), 300, 5)


@pytest.fixture(scope="module")
def gt(demo: dict[str, Path]) -> Any:
    return BENCH.load_ground_truth(demo["ground_truth"])


def _columns(gt: Any) -> list[str]:
    return [ground_truth_column(BENCH, q, {}) for q in gt.samples]


def test_the_official_answer_earns_one_a_wrong_letter_nothing_and_junk_no_format(gt: Any) -> None:
    cols = _columns(gt)
    rewarder = Rewarder()
    right = rewarder.score([f"Thinking...\nAnswer: {q.answer}" for q in gt.samples], cols)
    assert set(right.task) == {"frameqa"}
    np.testing.assert_array_equal(right.raw, 1.0)
    assert (right.terms["format"] == 1.0).all()
    wrong_letter = {q.answer: "A" if q.answer != "A" else "B" for q in gt.samples}
    wrong = rewarder.score([f"Answer: {wrong_letter[q.answer]}" for q in gt.samples], cols)
    np.testing.assert_array_equal(wrong.raw, 0.0)
    assert (wrong.terms["format"] == 1.0).all()  # read, and wrong
    # letters or option texts listed without the answer line, nothing: no letter read, no
    # reward at all (with "Answer:" before them the first is read: a guess, as on the board)
    for junk in ("", "A B C D", "A, B, C or D", "A/B/C/D", gt.samples[0].options[0]):
        out = rewarder.score([junk] * len(cols), cols)
        assert (out.raw == 0.0).all() and (out.reward == 0.0).all(), junk


@pytest.mark.parametrize("archetype", ["perfect", "strong", "weak", "terse", "garbage"])
def test_the_mean_raw_reward_is_the_board_accuracy(
    archetype: str, demo: dict[str, Path], gt: Any
) -> None:
    """The reward reads answers as the board does (the official parser, an unread answer 0)."""
    report = evaluate(demo[archetype], gt, benchmark=BENCH)  # the board's profile
    matched = BENCH.validate_submission(demo[archetype], gt)
    out = Rewarder().score([p or "" for p in matched.predictions], _columns(gt))
    assert float(np.mean(out.raw)) == pytest.approx(report.metrics["accuracy"], abs=1e-12)


def test_the_prompt_is_the_official_inference_s_and_the_row_carries_the_question(gt: Any) -> None:
    spec = spec_of(BENCH)
    q = gt.samples[0]
    asked = spec.prompt(q)
    assert asked["question"].startswith(INSTRUCTION + "\n\nQuestion:" + q.question + " \n\n")
    lettered = [f"{'ABCDEF'[i]}. {text}" for i, text in enumerate(q.options)]
    assert asked["question"].endswith("Options:\n" + repr(lettered) + "\n")  # the template's
    assert asked["question"] == INSTRUCTION + "\n\n" + question_text(q)
    assert asked["media"] == {"images": list(q.frames)}
    back, _ = spec.decode_item(json.loads(ground_truth_column(BENCH, q, {}))["item"])
    assert (back.sample_id, back.options, back.answer, back.frames) == (
        q.sample_id,
        q.options,
        q.answer,
        q.frames,
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"answer": "G"}, "answer must be one of the option letters ABCD"),
        ({"answer": "AB"}, "answer must be one of the option letters"),
        ({"options": ["only"]}, "options must hold 2 to 26 texts; got 1"),
        ({"frames": []}, "frames must name 1 to 5 images; got \\[\\]"),
        ({"frames": ["f"] * 6}, "frames must name 1 to 5 images; got \\['f'"),
        ({"frames": [""]}, "frames must name 1 to 5 images; got \\[''\\]"),
        ({"options": ["", "x", "y"]}, "options must be non-empty texts"),
        ({"options": [" ", "x", "y"]}, "options must be non-empty texts"),
        ({"surprise": 1}, "unknown field `surprise`"),
        ({"options": "ABCD"}, "Expected `array`, got `str`"),
    ],
)
def test_a_bad_row_names_its_row_and_what_is_wrong(change: dict[str, Any], message: str) -> None:
    item = {
        "id": "q1",
        "question": "Which?",
        "options": ["w", "x", "y", "z"],
        "answer": "B",
        "frames": ["f1.png", "f2.png"],
    }
    column = json.dumps({"benchmark": "medframeqa", "item": {**item, **change}})
    with pytest.raises(RewardInputError, match=rf"ground_truth\[0\]: .*{message}"):
        Rewarder().score(["Answer: B"], [column])


def test_verl_scores_a_medframeqa_row(gt: Any) -> None:
    q = gt.samples[0]
    column = ground_truth_column(BENCH, q, {})
    right = compute_score("medframeqa/frameqa", f"Answer: {q.answer}", column)
    unread = compute_score("medframeqa/frameqa", "no idea", column)
    assert right["raw"] == 1.0 and right["score"] == 1.0
    assert unread["raw"] == 0.0 and unread["score"] == 0.0


def test_normalised_on_the_weak_archetype_right_wrong_and_unread_answers_earn_what_the_docs_say(
    demo: dict[str, Path], gt: Any
) -> None:
    """docs/benchmarks/medframeqa.md: right about 0.95, readable and wrong 0.5, unread 0 (the
    weak reference is right on fewer than half its questions: its median raw reward is 0)."""
    stats = fit(demo["weak"], demo["ground_truth"], benchmark="medframeqa")
    cols = _columns(gt)
    rewarder = Rewarder(stats)
    right = rewarder.score([f"Answer: {q.answer}" for q in gt.samples], cols)
    wrong = rewarder.score(
        ["Answer: B" if q.answer != "B" else "Answer: A" for q in gt.samples], cols
    )
    unread = rewarder.score(["I cannot tell."] * len(cols), cols)
    np.testing.assert_allclose(right.reward, 1 / (1 + math.exp(-3)))  # 0.9526
    np.testing.assert_allclose(wrong.reward, 0.5)
    np.testing.assert_array_equal(unread.reward, 0.0)
    # the other regime: a reference right on every question (median 1, no spread: scale 1)
    high = Rewarder(fit(demo["perfect"], demo["ground_truth"], benchmark="medframeqa"))
    np.testing.assert_allclose(
        high.score([f"Answer: {q.answer}" for q in gt.samples], cols).reward, 0.5
    )
    np.testing.assert_allclose(
        high.score(
            ["Answer: B" if q.answer != "B" else "Answer: A" for q in gt.samples], cols
        ).reward,
        1 / (1 + math.exp(3)),  # 0.0474
    )


def test_no_strategy_without_the_answer_beats_the_best_constant_guess(gt: Any) -> None:
    """Answers that hedge (every letter, every option text, the option list, several answer
    lines, a box per letter) earn no more than always answering the most frequent key letter:
    the parser reads one letter or none, as the board's does."""
    keys = [q.answer for q in gt.samples]
    best_guess = max(keys.count(letter) for letter in set(keys)) / len(keys)
    cols = _columns(gt)

    def letters(q: Any) -> list[str]:
        return list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(q.options)])

    strategies = {
        "all letters after Answer:": lambda q: "Answer: " + " ".join(letters(q)),
        "one Answer line per letter": lambda q: "\n".join(f"Answer: {x}" for x in letters(q)),
        "reversed letters": lambda q: "Answer: " + " ".join(reversed(letters(q))),
        "every option text": lambda q: "It could be " + ", or ".join(q.options) + ".",
        "the option list copied": lambda q: "Answer: " + repr(list(q.options)),
        "a box per letter": lambda q: " ".join(f"\\boxed{{{x}}}" for x in letters(q)),
        "lowercase letters": lambda q: "Answer: " + " ".join(x.lower() for x in letters(q)),
    }
    for name, answer in strategies.items():
        out = Rewarder().score([answer(q) for q in gt.samples], cols)
        assert float(np.mean(out.raw)) <= best_guess + 1e-12, name


def test_an_answer_longer_than_the_board_accepts_earns_nothing(gt: Any) -> None:
    from medvidbench.core.submission import MAX_ANSWER_CHARS

    q = gt.samples[0]
    column = ground_truth_column(BENCH, q, {})
    padded = "x " * (MAX_ANSWER_CHARS // 2) + f"\nAnswer: {q.answer}"
    assert len(padded) > MAX_ANSWER_CHARS
    assert compute_score("medframeqa/frameqa", padded, column)["raw"] == 0.0
    assert compute_score("medframeqa/frameqa", padded[-2000:], column)["raw"] == 1.0


def test_verl_names_a_bad_row_by_its_index_and_id(gt: Any) -> None:
    item = json.loads(ground_truth_column(BENCH, gt.samples[0], {}))
    item["item"]["answer"] = "Z"
    with pytest.raises(RewardInputError, match=r"^row index 17, id 'q17': ground_truth\[0\]: "):
        compute_score(
            "medframeqa/frameqa", "Answer: A", json.dumps(item), {"index": 17, "id": "q17"}
        )


def test_media_dir_is_refused_for_trl_rows(demo: dict[str, Path], tmp_path: Path) -> None:
    import subprocess
    import sys

    args = ["rewards", "prepare", str(demo["ground_truth"]), "--benchmark", "medframeqa"]
    args += ["--out", str(tmp_path / "rows.jsonl"), "--media-dir", "/data"]
    done = subprocess.run(
        [sys.executable, "-m", "medvidbench", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "--media-dir applies to --style verl" in done.stderr
    assert not (tmp_path / "rows.jsonl").exists()
