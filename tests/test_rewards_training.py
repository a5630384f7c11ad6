"""Training visibility (issue #26): fit's provenance, per-task metrics through TRL's
``log_metric``, the saturation warning and refitting from the policy's own rollouts."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from medvidbench import benchmarks
from medvidbench.core.errors import UsageError
from medvidbench.rewards import Rewarder, fit, fit_rollouts, ground_truth_column, spec_of
from medvidbench.rewards.saturation import RewardSaturationWarning
from medvidbench.rewards.trl import append_rollouts, reward_function

MEDVIDBENCH = benchmarks.get("medvidbench")
RULE_TASKS = ("stg", "tal")


@pytest.fixture(scope="module")
def answers(synthetic: dict[str, Path], synthetic_gt: Any) -> dict[str, Any]:
    """The STG and TAL items' ground-truth columns and each archetype's answers to them."""
    extras = spec_of(MEDVIDBENCH).row_extras(synthetic_gt.samples)
    keep = [i for i, s in enumerate(synthetic_gt.samples) if s.task in RULE_TASKS]
    out: dict[str, Any] = {
        "columns": [
            ground_truth_column(MEDVIDBENCH, synthetic_gt.samples[i], extras[i]) for i in keep
        ],
        "task": [synthetic_gt.samples[i].task for i in keep],
    }
    for arch in ("weak", "strong"):
        predicted = MEDVIDBENCH.validate_submission(synthetic[arch], synthetic_gt).predictions
        out[arch] = [predicted[i] or "" for i in keep]
    return out


def rollouts_of(path: Path, texts: list[str], columns: list[str], times: int = 1) -> Path:
    for _ in range(times):
        append_rollouts(path, [[{"role": "assistant", "content": t}] for t in texts], columns)
    return path


@pytest.fixture(scope="module")
def weak_stats(answers: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Statistics fitted on the weak archetype's STG and TAL answers (the reference)."""
    path = tmp_path_factory.mktemp("rollouts") / "weak.jsonl"
    return fit_rollouts(rollouts_of(path, answers["weak"], answers["columns"]), min_samples=5)


def test_fit_stamps_the_prediction_file_it_read(synthetic: dict[str, Path], tmp_path: Path) -> None:
    # the weak archetype's STG and TAL answers only (a partial file; no caption to encode)
    records = json.loads(synthetic["weak"].read_text())
    mine = tmp_path / "sft_predictions.json"
    mine.write_text(json.dumps([r for r in records if r["qa_type"] in ("stg", "tal")]))
    stats = fit(mine, synthetic["ground_truth"], benchmark="medvidbench", min_samples=5)
    assert {task for task, _, _ in stats.groups} == set(RULE_TASKS)
    assert stats.provenance["predictions"] == "sft_predictions.json"  # not "judge"


def test_per_task_terms_are_logged_through_trls_log_metric(
    answers: dict[str, Any], weak_stats: Any
) -> None:
    logged: dict[str, list[float]] = {}
    extra: dict[str, list[Any]] = {}
    stg_only = reward_function(weak_stats, tasks=["stg"])
    n = len(answers["columns"])
    # as GRPOTrainer._calculate_rewards passes them (TRL 1.16): two callables among the kwargs
    out = stg_only(
        prompts=[""] * n,
        completions=answers["strong"],
        completion_ids=[[1]] * n,
        ground_truth=answers["columns"],
        task=answers["task"],
        trainer_state=None,
        log_metric=lambda name, value: logged.setdefault(name, []).append(value),
        log_extra=lambda column, values: extra.setdefault(column, []).extend(values),
    )
    stg = [i for i, t in enumerate(answers["task"]) if t == "stg"]
    last = stg_only.last
    assert {k.split("/")[1] for k in logged} == {"stg"}  # TAL rows are another function's
    assert logged["medvidbench_stg/stg/raw_score"] == [pytest.approx(last.terms["score"].mean())]
    assert logged["medvidbench_stg/stg/reward"] == [
        pytest.approx(float(np.mean([out[i] for i in stg])))
    ]
    assert 0.5 < logged["medvidbench_stg/stg/normalised_score"][0] <= 1.0
    assert logged["medvidbench_stg/stg/raw_format"] == [1.0]
    assert logged["medvidbench_stg/stg/saturated"] == [0.0]  # too few values to judge yet
    assert len(extra["medvidbench_stg_task"]) == n == len(extra["medvidbench_stg_raw"])
    assert [t is None for t in extra["medvidbench_stg_task"]] == [
        t != "stg" for t in answers["task"]
    ]
    # without statistics there is no normalised term to log
    plain = reward_function(tasks=["stg"])
    logged.clear()
    plain(
        completions=answers["strong"],
        ground_truth=answers["columns"],
        log_metric=lambda k, v: logged.setdefault(k, []).append(v),
    )
    assert "medvidbench_stg/stg/raw" in logged
    assert not any("normalised" in k or "saturated" in k for k in logged)


def test_a_batch_a_function_does_not_cover_still_gives_its_columns(
    answers: dict[str, Any],
) -> None:
    """TRL fills a column a step does not give with the values of an earlier step (its
    completions table showed STG's task and raw reward on next-action rows): every call gives
    every column, None where the function covers no row; ``.last`` is this batch's."""
    stg_only = reward_function(tasks=["stg"])
    tal = [i for i, t in enumerate(answers["task"]) if t == "tal"][:4]
    stg = [i for i, t in enumerate(answers["task"]) if t == "stg"][:4]
    columns: list[dict[str, list[Any]]] = []
    for rows in (stg, tal):
        extra: dict[str, list[Any]] = {}
        out = stg_only(
            completions=[answers["strong"][i] for i in rows],
            ground_truth=[answers["columns"][i] for i in rows],
            log_extra=lambda column, values, into=extra: into.__setitem__(column, list(values)),
        )
        columns.append(extra)
        assert (out == [None] * 4) == (rows is tal)
    assert columns[0]["medvidbench_stg_task"] == ["stg"] * 4
    assert columns[1] == {"medvidbench_stg_task": [None] * 4, "medvidbench_stg_raw": [None] * 4}
    assert stg_only.last is None  # the last batch had nothing of the function's


def test_a_component_function_logs_its_own_reward(answers: dict[str, Any], weak_stats: Any) -> None:
    """Each function of ``reward_functions`` logs the mean of what it returned as its reward,
    not the combined reward (every one once logged the combined one under its own name)."""
    from medvidbench.rewards.trl import reward_functions

    score, similarity, _ = reward_functions(weak_stats)
    kept = [i for i, t in enumerate(answers["task"]) if t == "stg"][:6]
    batch = {
        "completions": [answers["strong"][i] for i in kept],
        "ground_truth": [answers["columns"][i] for i in kept],
    }
    logged: dict[str, dict[str, float]] = {}
    for function in (score, similarity):
        mine: dict[str, float] = {}
        out = function(**batch, log_metric=mine.__setitem__)
        logged[function.__name__] = mine
        values = [v for v in out if v is not None]
        if values:
            assert mine[f"{function.__name__}/stg/reward"] == pytest.approx(np.mean(values))
        else:  # STG has no similarity term: no reward of this function to log
            assert f"{function.__name__}/stg/reward" not in mine
    assert "medvidbench_score/stg/reward" in logged["medvidbench_score"]


def test_a_misspelt_task_or_a_batch_of_two_lengths_is_an_error(answers: dict[str, Any]) -> None:
    for tasks, message in (
        (["nap"], "no reward for task 'nap'; tasks with a reward: "),
        (["STG"], "no reward for task 'STG'"),
        ("stg", "a list of task names, not the string 'stg'"),
        ([], "no task named"),
    ):
        with pytest.raises(UsageError, match=message):
            reward_function(tasks=tasks)  # type: ignore[arg-type]
    once = reward_function(tasks=(t for t in ["stg"]))  # a generator, read once
    assert once.__name__ == "medvidbench_stg"
    everything = reward_function()
    for completions, truths in (
        (["a", "b"], answers["columns"][:1]),
        (["a"], answers["columns"][:2]),
    ):
        with pytest.raises(UsageError, match=f"{len(completions)} completions but {len(truths)}"):
            everything(completions=completions, ground_truth=truths)


def test_saturation_warns_once_and_refitting_on_the_policy_restores_the_spread(
    answers: dict[str, Any], weak_stats: Any, tmp_path: Path
) -> None:
    cols, strong = answers["columns"], answers["strong"]
    stg = np.array([t == "stg" for t in answers["task"]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the reference itself never saturates
        reference = Rewarder(weak_stats)
        for _ in range(4):
            reference.score(answers["weak"], cols)
        assert reference.saturation is not None and reference.saturation.status() == []
    rewarder = Rewarder(weak_stats)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):  # 5 x 15 answers of the smallest group: past the 64 one needs
            before = rewarder.score(strong, cols)
    assert rewarder.saturation is not None
    status = rewarder.saturation.status()
    saturated = {(s.task, s.dataset) for s in status}
    assert ("stg", "CoPESD") in saturated and ("tal", "NurViD") in saturated
    assert all(w.category is RewardSaturationWarning for w in caught)
    assert sorted(str(w.message) for w in caught) == sorted(s.message() for s in status)
    assert "fit the statistics again" in status[0].message()
    for s in status:
        assert s.margin > 1.0 and s.normalised_median > 0.95
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per group, not once per batch
        rewarder.score(strong, cols)
    # the policy's own outputs as the new reference: its median back at 0.5, its spread back
    refit = fit_rollouts(rollouts_of(tmp_path / "strong.jsonl", strong, cols), min_samples=5)
    assert refit.provenance["source"] == "rollouts"
    assert refit.provenance["predictions"] == "strong.jsonl"
    after = Rewarder(refit).score(strong, cols)
    assert 0.4 < float(np.median(after.reward[stg])) < 0.6
    assert float(np.std(after.reward[stg])) > 2 * float(np.std(before.reward[stg]))
    assert Rewarder(weak_stats, saturation_margin=None).saturation is None


def test_rollouts_files_are_read_strictly_and_by_benchmark(
    answers: dict[str, Any], tmp_path: Path
) -> None:
    path = rollouts_of(tmp_path / "r.jsonl", answers["weak"], answers["columns"], times=2)
    n = len(answers["columns"])
    assert fit_rollouts(path, min_samples=5).provenance["rows"] == 2 * n
    assert fit_rollouts(path, min_samples=5, last=10).provenance["rows"] == 10
    with pytest.raises(UsageError, match="no rollout of a medsg task"):
        fit_rollouts(path, benchmark="medsg")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text().splitlines()[0] + "\n{not json\n")
    with pytest.raises(UsageError, match=r"bad.jsonl line 2: not JSON"):
        fit_rollouts(bad)
    bad.write_text(json.dumps({"completion": "x", "ground_truth": "{}"}) + "\n")
    with pytest.raises(UsageError, match=r"bad.jsonl line 1: ground_truth"):
        fit_rollouts(bad)
    bad.write_text(json.dumps({"ground_truth": answers["columns"][0]}) + "\n")
    with pytest.raises(UsageError, match="expected an object with completion"):
        fit_rollouts(bad)


def test_rewards_fit_command_refits_from_rollouts(answers: dict[str, Any], tmp_path: Path) -> None:
    from click.testing import CliRunner

    import medvidbench.cli.rewards  # noqa: F401  (main adds its command group)
    from medvidbench.cli.main import app

    path = rollouts_of(tmp_path / "policy.jsonl", answers["strong"], answers["columns"])
    out = tmp_path / "stats.json"
    runner = CliRunner()
    args = ["rewards", "fit", "--rollouts", str(path), "--out", str(out), "--min-samples", "5"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    stats = json.loads(out.read_text())
    assert stats["provenance"]["source"] == "rollouts"
    assert stats["provenance"]["rows"] == len(answers["columns"])
    assert {g["task"] for g in stats["groups"]} == set(RULE_TASKS)
    neither = runner.invoke(app, ["rewards", "fit", "--out", str(out)])
    assert neither.exit_code != 0 and "or --rollouts" in neither.output
    alone = runner.invoke(app, ["rewards", "fit", str(path), "--out", str(out)])
    assert alone.exit_code != 0 and "needs --ground-truth" in alone.output


@pytest.mark.parametrize(
    ("given", "want"),
    [({}, "1"), ({"OPENBLAS_NUM_THREADS": "2"}, "2"), ({"OMP_NUM_THREADS": "2"}, None)],
)
def test_rewards_commands_run_blas_on_one_thread_unless_told(
    given: dict[str, str], want: str | None
) -> None:
    import os
    import subprocess
    import sys

    code = (
        "import os, sys; from medvidbench.core.blas import one_blas_thread as f; "
        "took = f(); import numpy; "
        "print(took, f(), os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env={**env, **given}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    # effective before numpy is loaded, not after; an explicit setting wins
    assert done.stdout.split() == ["True", "False", str(want)]
