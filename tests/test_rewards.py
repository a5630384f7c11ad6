"""Training rewards: the benchmarks' own scorers as rewards, MedGRPO's normalisation, and the
TRL and verl adapters called exactly as those trainers call them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from medvidbench import benchmarks
from medvidbench.core.errors import UsageError
from medvidbench.core.evaluation import evaluate
from medvidbench.core.rewards import (
    Normaliser,
    Quantiles,
    RewardStats,
    logistic,
)
from medvidbench.rewards import (
    Rewarder,
    RewardInputError,
    fit,
    ground_truth_column,
    spec_of,
)
from medvidbench.rewards.trl import reward_function
from medvidbench.rewards.verl import KEYS, compute_score, compute_score_batch

MEDVIDBENCH = benchmarks.get("medvidbench")
MEDSG = benchmarks.get("medsg")
UNREADABLE = ["", "   \n", "???", "-- !! --"]


@pytest.fixture(scope="module")
def medsg_demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    assert MEDSG.demo is not None
    return MEDSG.demo.synthesise(tmp_path_factory.mktemp("medsg"), 400, 3)


def columns(bench: Any, gt: Any) -> list[str]:
    spec = spec_of(bench)
    return [
        ground_truth_column(bench, s, e)
        for s, e in zip(gt.samples, spec.row_extras(gt.samples), strict=True)
    ]


def reference_text(item: Any) -> str:
    """The answer a perfect model gives: the reference text (a MedSG-Bench box as text)."""
    return item.answer if isinstance(item.answer, str) else json.dumps(list(item.answer))


# --- raw rewards ------------------------------------------------------------------------------


def test_every_task_of_every_benchmark_has_a_reward() -> None:
    for bench in (MEDVIDBENCH, MEDSG):
        assert set(spec_of(bench).tasks) == {t.name for t in bench.tasks}


@pytest.mark.parametrize("bench_name", ["medvidbench", "medsg"])
def test_the_reference_answer_earns_the_maximum_and_an_unreadable_one_nothing(
    bench_name: str, synthetic: dict[str, Path], medsg_demo: dict[str, Path]
) -> None:
    bench = benchmarks.get(bench_name)
    gt = bench.load_ground_truth(
        synthetic["ground_truth"] if bench_name == "medvidbench" else medsg_demo["ground_truth"]
    )
    cols = columns(bench, gt)
    rewarder = Rewarder()
    best = rewarder.score([reference_text(s) for s in gt.samples], cols)
    assert set(best.task) == {t.name for t in bench.tasks}
    np.testing.assert_allclose(best.raw, 1.0, atol=1e-6)
    assert (best.terms["format"] == 1.0).all()
    for junk in UNREADABLE:
        worst = rewarder.score([junk] * len(cols), cols)
        assert (worst.raw == 0.0).all(), (junk, sorted(set(np.array(worst.task)[worst.raw > 0])))
        assert (worst.reward == 0.0).all()


@pytest.mark.parametrize("archetype", ["weak", "strong", "format-noisy"])
def test_mean_raw_reward_is_the_strict_metric_where_the_metric_is_a_per_sample_mean(
    archetype: str, synthetic: dict[str, Path], synthetic_gt: Any
) -> None:
    report = evaluate(MEDVIDBENCH, synthetic[archetype], synthetic_gt, "strict-v2")
    matched = MEDVIDBENCH.validate_submission(synthetic[archetype], synthetic_gt)
    cols = columns(MEDVIDBENCH, synthetic_gt)
    out = Rewarder().score([p or "" for p in matched.predictions], cols)
    checked = 0
    for task, reward in spec_of(MEDVIDBENCH).tasks.items():
        members = [i for i, t in enumerate(out.task) if t == task]
        mean = float(np.mean(out.terms["score"][members])) if reward.score else None
        if reward.mean_of:
            expected = np.mean([report.metrics[k] for k in reward.mean_of])
            assert mean == pytest.approx(expected, abs=1e-12), task
            checked += 1
    assert checked == 4  # TAL, STG, NAP, DVC; SA and CVS balance accuracies (docs/rewards.md)


def test_medsg_mean_raw_reward_is_the_corrected_mean_iou(medsg_demo: dict[str, Path]) -> None:
    gt = MEDSG.load_ground_truth(medsg_demo["ground_truth"])
    report = evaluate(MEDSG, medsg_demo["strong"], gt, "corrected")
    matched = MEDSG.validate_submission(medsg_demo["strong"], gt)
    out = Rewarder().score_items([("medsg", s, {}) for s in gt.samples], list(matched.predictions))
    for task in spec_of(MEDSG).tasks:
        members = [i for i, t in enumerate(out.task) if t == task]
        assert float(np.mean(out.raw[members])) == pytest.approx(
            report.metrics[f"{task}.miou"], abs=1e-12
        )


def test_localisation_rewards_are_gated_by_format(synthetic_gt: Any) -> None:
    stats = _stats_for(synthetic_gt, p50=0.6, iqr=0.2)
    tal = next(i for i, s in enumerate(synthetic_gt.samples) if s.task == "tal")
    nap = next(i for i, s in enumerate(synthetic_gt.samples) if s.task == "next_action")
    cols = columns(MEDVIDBENCH, synthetic_gt)
    out = Rewarder(stats).score(["no segments here", ""], [cols[tal], cols[nap]])
    assert out.reward[0] == 0.0  # gated: the normalised 0 would be logistic(-9) > 0
    # issue 26: an unreadable answer earns 0 on every task, NAP included (it earned
    # logistic(0) before); a readable wrong one still earns the logistic's value at 0
    assert out.reward[1] == 0.0
    wrong = Rewarder(stats).score(["suction"], [cols[nap]])
    assert wrong.reward[0] == pytest.approx(logistic(np.array(0.0), 0.6, 0.2, 3.0))


def _stats_for(gt: Any, p50: float, iqr: float) -> RewardStats:
    groups = {}
    for task in {s.task for s in gt.samples}:
        for term in ("score", "similarity", "judge"):
            groups[(task, "*", term)] = Quantiles(100, p50 - iqr / 2, p50, p50 + iqr / 2, 0.1)
    return RewardStats("medvidbench", MEDVIDBENCH.scorer_version, "strict-v2", groups)


# --- normalisation ----------------------------------------------------------------------------


def test_logistic_is_one_half_at_the_median_monotone_and_bounded() -> None:
    x = np.linspace(-5, 5, 2001)
    r = logistic(x, 0.3, 0.25, 3.0)
    assert logistic(np.array(0.3), 0.3, 0.25, 3.0) == pytest.approx(0.5)
    assert (np.diff(r) >= 0).all()
    middle = (x > -1) & (x < 1.6)
    assert (np.diff(r[middle]) > 0).all()
    assert ((r >= 0) & (r <= 1)).all()
    extreme = logistic(np.array([1e300, -1e300]), 0.0, 1e-9, 3.0)
    assert extreme[0] == 1.0 and 0.0 <= extreme[1] < 1e-300
    # the formula itself, at one point: 1 / (1 + exp(-3 (0.8 - 0.3) / 0.25)) = 1 / (1 + e^-6)
    assert logistic(np.array(0.8), 0.3, 0.25, 3.0) == pytest.approx(1 / (1 + math.exp(-6)))


def test_steeper_k_separates_more() -> None:
    lo = logistic(np.array([0.2, 0.4]), 0.3, 0.2, 1.0)
    hi = logistic(np.array([0.2, 0.4]), 0.3, 0.2, 6.0)
    assert hi[1] - hi[0] > lo[1] - lo[0]


def test_zero_iqr_falls_back_to_the_standard_deviation_then_to_one() -> None:
    binary = Quantiles.of([1.0] * 80 + [0.0] * 20)  # a 0/1 task at 80 %: p25 = p50 = p75 = 1
    assert binary.iqr == 0.0
    assert binary.scale() == (pytest.approx(0.4), "std")
    constant = Quantiles.of([0.7] * 30)
    assert constant.scale() == (1.0, "unit")
    stats = RewardStats("medvidbench", "x", "strict-v2", {("tal", "AVOS", "score"): constant})
    out, source = Normaliser(stats).apply("tal", "AVOS", "score", np.array([0.7, 0.9]))
    assert source == "dataset/unit"
    assert out[0] == pytest.approx(0.5)
    assert 0.5 < out[1] < 1.0


def test_small_groups_use_their_task_pool_and_unknown_groups_pass_raw() -> None:
    values = {("stg", "AVOS", "score"): [0.1] * 5, ("stg", "CoPESD", "score"): [0.5] * 40}
    stats = RewardStats.fit("medvidbench", "x", "strict-v2", values, min_samples=20)
    assert stats.lookup("stg", "CoPESD", "score")[1] == "dataset"
    assert stats.lookup("stg", "AVOS", "score")[1] == "pool"  # 5 < 20
    assert stats.lookup("stg", "JIGSAWS", "score")[1] == "pool"  # never seen
    assert stats.lookup("tal", "AVOS", "score") == (None, "none")
    pool = stats.groups[("stg", "*", "score")]
    assert pool.n == 45
    out, source = Normaliser(stats).apply("tal", "AVOS", "score", np.array([0.25]))
    assert (out.tolist(), source) == ([0.25], "none")


def test_stats_round_trip_and_refuse_other_scorer_versions(tmp_path: Path) -> None:
    stats = RewardStats.fit(
        "medvidbench",
        MEDVIDBENCH.scorer_version,
        "strict-v2",
        {("stg", "AVOS", "score"): list(np.linspace(0, 1, 50))},
    )
    stats.save(tmp_path / "s.json")
    again = RewardStats.load(tmp_path / "s.json")
    assert again.groups == stats.groups
    Rewarder(tmp_path / "s.json")  # accepted
    stale = again.to_dict() | {"scorer_version": "0.9.0"}
    (tmp_path / "stale.json").write_text(json.dumps(stale))
    with pytest.raises(UsageError, match="fit them again"):
        Rewarder(tmp_path / "stale.json")
    (tmp_path / "bad.json").write_text(
        '{"format": "medvidbench-reward-stats", "version": 1, "groups": [{"task": "stg"}]}'
    )
    with pytest.raises(UsageError, match="group 0 is malformed"):
        RewardStats.load(tmp_path / "bad.json")
    with pytest.raises(UsageError, match="k must be a positive number"):
        Rewarder(tmp_path / "s.json", k=0)


def test_fit_and_normalised_rewards_end_to_end(
    synthetic: dict[str, Path], synthetic_gt: Any
) -> None:
    stats = fit(
        synthetic["weak"], synthetic["ground_truth"], benchmark="medvidbench", min_samples=5
    )
    assert stats.provenance["ground_truth_sha256"] == synthetic_gt.sha256
    assert ("stg", "*", "score") in stats.groups and (
        "video_summary",
        "*",
        "similarity",
    ) in stats.groups
    cols = columns(MEDVIDBENCH, synthetic_gt)
    weak = MEDVIDBENCH.validate_submission(synthetic["weak"], synthetic_gt).predictions
    strong = MEDVIDBENCH.validate_submission(synthetic["strong"], synthetic_gt).predictions
    rewarder = Rewarder(stats)
    r_weak = rewarder.score([p or "" for p in weak], cols)
    r_strong = rewarder.score([p or "" for p in strong], cols)
    assert ((r_weak.reward >= 0) & (r_weak.reward <= 1)).all()
    # the reference model sits near 0.5 on its own continuous terms; a better model above it
    stg = [i for i, t in enumerate(r_weak.task) if t == "stg"]
    assert 0.4 < float(np.median(r_weak.reward[stg])) < 0.6
    assert float(np.mean(r_strong.reward[stg])) > float(np.mean(r_weak.reward[stg])) + 0.2
    assert r_strong.sources and r_strong.sources[stg[0]]["score"].startswith(("dataset", "pool"))
    row = r_strong.row(stg[0])
    assert {"reward", "raw", "raw_score", "normalised_score", "raw_format"} <= set(row)


# --- inputs -----------------------------------------------------------------------------------


def test_bad_ground_truth_and_completions_name_the_row(synthetic_gt: Any) -> None:
    good = columns(MEDVIDBENCH, synthetic_gt)[0]
    rewarder = Rewarder()
    cases = [
        ("{not json", "ground_truth\\[1\\]: not JSON"),
        ('{"benchmark": "nope", "item": {}}', "ground_truth\\[1\\]: .*nope"),
        ('{"item": {}}', "ground_truth\\[1\\]: benchmark must be"),
        ("[1, 2]", 'ground_truth\\[1\\]: expected \\{"benchmark"'),
        (
            json.dumps(
                {"benchmark": "medvidbench", "item": {**json.loads(good)["item"], "qa_type": "zzz"}}
            ),
            "ground_truth\\[1\\]: unknown qa_type 'zzz'",
        ),
        (
            json.dumps({"benchmark": "medvidbench", "item": {"qa_type": "tal"}}),
            "ground_truth\\[1\\]: Object missing required field",
        ),
        (
            json.dumps({"benchmark": "mcqa-demo", "item": {}}),
            "ground_truth\\[1\\]: benchmark 'mcqa-demo' offers no training rewards",
        ),
    ]
    for bad, message in cases:
        with pytest.raises(RewardInputError, match=message):
            rewarder.score(["a", "b"], [good, bad])
    with pytest.raises(RewardInputError, match="completions\\[0\\]: expected a string"):
        rewarder.score([42], [good])
    with pytest.raises(RewardInputError, match="2 completions but 1 ground truths"):
        rewarder.score(["a", "b"], [good])


def test_a_lone_surrogate_is_read_as_a_replacement_character(
    synthetic_gt: Any, tmp_path: Path
) -> None:
    """Bytes a pipeline kept undecoded (``surrogateescape``) in a completion: no UTF-8 encoder
    takes them (the caption encoder's tokenizer raised TypeError, the rollouts file
    UnicodeEncodeError); the answer is scored as with U+FFFD there, and the rollouts file
    keeps it as an escape."""
    from medvidbench.rewards.trl import append_rollouts

    rows = {s.task: s for s in synthetic_gt.samples}
    extras = spec_of(MEDVIDBENCH).row_extras(list(rows.values()))
    truths = [
        ground_truth_column(MEDVIDBENCH, s, e) for s, e in zip(rows.values(), extras, strict=True)
    ]
    raw = [s.answer.encode() + b" \xff" for s in rows.values()]
    odd = [r.decode("utf-8", "surrogateescape") for r in raw]
    fine = [r.decode("utf-8", "replace") for r in raw]
    rewarder = Rewarder()
    got, expected = rewarder.score(odd, truths), rewarder.score(fine, truths)
    np.testing.assert_array_equal(got.reward, expected.reward)
    chat = rewarder.score([[{"role": "assistant", "content": t}] for t in odd], truths)
    np.testing.assert_array_equal(chat.reward, expected.reward)
    path = tmp_path / "rollouts.jsonl"
    append_rollouts(path, odd, truths)
    back = [json.loads(line)["completion"] for line in path.read_text("utf-8").splitlines()]
    assert back == odd


def test_chat_completions_read_the_assistant_turn(synthetic_gt: Any) -> None:
    item = next(s for s in synthetic_gt.samples if s.task == "stg")
    col = ground_truth_column(MEDVIDBENCH, item, {})
    rewarder = Rewarder()
    plain = rewarder.score([item.answer], [col]).raw[0]
    chat = [{"role": "assistant", "content": item.answer}]
    parts = [{"role": "assistant", "content": [{"type": "text", "text": item.answer}]}]
    assert plain == 1.0
    assert rewarder.score([chat, parts], [col, col]).raw.tolist() == [1.0, 1.0]


def test_nap_rows_carry_the_file_labels_a_test_set_would_derive(synthetic_gt: Any) -> None:
    """EgoSurgery's class list is its labels: a batch of one row must not make it one class."""
    spec = spec_of(MEDVIDBENCH)
    items = list(synthetic_gt.samples)
    extras = spec.row_extras(items)
    ego = [i for i, s in enumerate(items) if s.task == "next_action" and s.dataset == "EgoSurgery"]
    assert ego and all(len(extras[i]["label_set"]) > 1 for i in ego)
    i = ego[0]
    wrong = next(label for label in extras[i]["label_set"] if label != items[i].answer)
    rewarder = Rewarder()
    with_labels = ground_truth_column(MEDVIDBENCH, items[i], extras[i])
    assert rewarder.score([wrong], [with_labels]).raw[0] == 0.0
    without = ground_truth_column(MEDVIDBENCH, items[i], {})  # one label: anything is "right"
    assert rewarder.score([wrong], [without]).raw[0] == 1.0


# --- adapters ---------------------------------------------------------------------------------


def test_trl_reward_function_as_grpo_trainer_calls_it(
    synthetic: dict[str, Path], synthetic_gt: Any
) -> None:
    cols = columns(MEDVIDBENCH, synthetic_gt)[:40]
    items = synthetic_gt.samples[:40]
    completions = [[{"role": "assistant", "content": s.answer}] for s in items]
    prompts = [[{"role": "user", "content": s.question}] for s in items]
    # GRPOTrainer._calculate_rewards: every column but prompt/completion, as lists, by keyword
    kwargs = {
        "ground_truth": cols,
        "task": [s.task for s in items],
        "dataset": [s.dataset for s in items],
        "benchmark": ["medvidbench"] * 40,
        "media": [{}] * 40,
        "trainer_state": None,
    }
    every = reward_function()
    assert every.__name__ == "medvidbench"
    out = every(prompts=prompts, completions=completions, completion_ids=[[1]] * 40, **kwargs)
    assert len(out) == 40 and all(v == pytest.approx(1.0) for v in out)
    assert every.last.raw.shape == (40,)
    only_stg = reward_function(tasks=["stg"])
    assert only_stg.__name__ == "medvidbench_stg"
    got = only_stg(prompts=prompts, completions=completions, completion_ids=[[1]] * 40, **kwargs)
    assert [v is None for v in got] == [s.task != "stg" for s in items]
    with pytest.raises(UsageError, match="no ground_truth column"):
        every(prompts=prompts, completions=completions, task=kwargs["task"])


def test_verl_compute_score_as_the_reward_managers_call_it(
    synthetic: dict[str, Path], synthetic_gt: Any, tmp_path: Path
) -> None:
    stats = fit(synthetic["weak"], synthetic["ground_truth"], benchmark="medvidbench")
    stats.save(tmp_path / "stats.json")
    cols = columns(MEDVIDBENCH, synthetic_gt)[:30]
    items = synthetic_gt.samples[:30]
    # NaiveRewardManager: keyword arguments, one response at a time; reward_kwargs via partial
    one = compute_score(
        data_source="medvidbench",
        solution_str=items[0].answer,
        ground_truth=cols[0],
        extra_info={"index": 0},
        stats=str(tmp_path / "stats.json"),
    )
    assert tuple(one) == KEYS and one["raw"] == pytest.approx(1.0)
    batch = compute_score_batch(
        data_sources=["medvidbench"] * 30,
        solution_strs=["???"] * 30,
        ground_truths=cols,
        extra_infos=[None] * 30,
        stats=str(tmp_path / "stats.json"),
    )
    assert len(batch) == 30 and all(tuple(b) == KEYS for b in batch)
    assert all(b["raw"] == 0.0 and b["format"] == 0.0 for b in batch)
    with pytest.raises(UsageError, match="unknown judge"):
        compute_score("medvidbench", "x", cols[0], None, judge="gpt")


def test_adapters_import_nothing_heavy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, medvidbench.rewards.trl, medvidbench.rewards.verl;"
        "heavy = {'torch', 'openai', 'trl', 'verl', 'transformers', 'tokenizers', "
        "'medvidbench.core.embeddings', 'medvidbench.benchmarks.medvidbench.tasks.nap'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the judge --------------------------------------------------------------------------------


def test_caption_rewards_mix_judge_and_similarity_and_reuse_cached_judgements(
    synthetic: dict[str, Path], synthetic_gt: Any
) -> None:
    from medvidbench.core.judge.cache import MemoryJudgeCache
    from medvidbench.core.judge.client import Judge, JudgeConfig
    from medvidbench.core.judge.fake_server import FakeJudgeServer

    rubric = MEDVIDBENCH.judging.rubric
    assert rubric is not None
    codes = [a.code for a in rubric.aspects]
    captions = [
        i
        for i, s in enumerate(synthetic_gt.samples)
        if s.task in ("video_summary", "region_caption", "dense_captioning")
    ][:60]
    items = [synthetic_gt.samples[i] for i in captions]
    cols = [columns(MEDVIDBENCH, synthetic_gt)[i] for i in captions]
    strong = MEDVIDBENCH.validate_submission(synthetic["strong"], synthetic_gt).predictions
    answers = [strong[i] or "" for i in captions]

    def all_fours(prompt: str) -> str:  # every aspect 4: (4 - 1) / 4 = 0.75
        return "\n".join(f"{c}: 4" for c in codes)

    with FakeJudgeServer(responder=all_fours) as server:
        config = JudgeConfig(
            model="j", base_url=server.url, api_key="k", timeout=5, prompt_version=rubric.version
        )
        judge = Judge(config, MemoryJudgeCache())
        rewarder = Rewarder(judge=judge)
        first = rewarder.score(answers, cols)
        calls = server.answered
        again = rewarder.score(answers, cols)
        assert server.answered == calls > 0  # the second batch was answered from the cache
    np.testing.assert_array_equal(first.reward, again.reward)
    vs_rc = [n for n, s in enumerate(items) if s.task != "dense_captioning"]
    assert vs_rc
    for n in vs_rc:
        assert first.terms["judge"][n] == pytest.approx(0.75)
        assert first.raw[n] == pytest.approx(0.5 * first.terms["similarity"][n] + 0.5 * 0.75)
    without = Rewarder().score(answers, cols)
    np.testing.assert_allclose(without.raw[vs_rc], first.terms["similarity"][vs_rc])
    assert np.isnan(without.terms["judge"]).all()


def test_deeply_nested_ground_truth_is_a_clear_error() -> None:
    with pytest.raises(RewardInputError, match=r"ground_truth\[0\]: .*nested too deeply"):
        Rewarder().score(["x"], ["[" * 100_000 + "]" * 100_000])
