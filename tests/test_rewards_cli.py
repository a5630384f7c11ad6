"""``medvidbench rewards``: prepare a training file, fit the normalisation, check a model's
rewards, and train-side adapters reading the prepared rows, as a researcher runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import medvidbench.cli.rewards  # noqa: F401  (main adds its command group; harmless)
from medvidbench.cli.main import app
from medvidbench.rewards.trl import reward_function
from medvidbench.rewards.verl import compute_score_batch

runner = CliRunner()


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "medvidbench", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def fewer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 200-sample synthetic set, every task in it: fit and score encode every caption with
    the sentence encoder in a process of their own, the suite's costliest test at 600."""
    from medvidbench.benchmarks.medvidbench.synth import write_synthetic

    return write_synthetic(tmp_path_factory.mktemp("fewer"), samples=200, seed=7)


def test_prepare_fit_score_and_train_on_the_prepared_rows(
    fewer: dict[str, Path], tmp_path: Path
) -> None:
    from medvidbench.benchmarks.medvidbench.groundtruth import load_ground_truth
    from medvidbench.benchmarks.medvidbench.tasks import TASKS

    synthetic, gt = fewer, fewer["ground_truth"]
    synthetic_gt = load_ground_truth(gt)
    assert {s.task for s in synthetic_gt.samples} == set(TASKS)  # every task still there
    done = cli("rewards", "prepare", gt, "--out", tmp_path / "trl.jsonl")
    assert done.returncode == 0, done.stderr
    assert f"{len(synthetic_gt)} rows written" in done.stdout
    rows = read_rows(tmp_path / "trl.jsonl")
    assert set(rows[0]) == {"prompt", "ground_truth", "benchmark", "task", "dataset", "media"}
    assert rows[0]["prompt"][0]["role"] == "user"
    assert rows[0]["prompt"][0]["content"] == synthetic_gt.samples[0].question

    done = cli(
        "rewards",
        "prepare",
        gt,
        "--out",
        tmp_path / "verl.jsonl",
        "--style",
        "verl",
        "--tasks",
        "stg,tal",
    )
    assert done.returncode == 0, done.stderr
    verl_rows = read_rows(tmp_path / "verl.jsonl")
    assert {r["ability"] for r in verl_rows} == {"stg", "tal"}
    assert verl_rows[0]["reward_model"]["style"] == "rule"
    assert set(verl_rows[0]["extra_info"]) == {"index", "task", "dataset", "id"}

    done = cli(
        "rewards", "fit", synthetic["weak"], "--ground-truth", gt, "--out", tmp_path / "stats.json"
    )
    assert done.returncode == 0, done.stderr
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["format"] == "medvidbench-reward-stats" and stats["profile"] == "strict-v2"
    assert "no judge configured" in done.stderr

    done = cli(
        "rewards",
        "score",
        synthetic["strong"],
        "--ground-truth",
        gt,
        "--stats",
        tmp_path / "stats.json",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    means = json.loads(done.stdout)
    assert {m["task"] for m in means} == {r["task"] for r in rows}
    assert all(0 <= m["reward"] <= 1 for m in means)

    # the prepared rows, straight into the adapters
    trl = reward_function(tmp_path / "stats.json")
    batch = rows[:50]
    got = trl(
        prompts=[r["prompt"] for r in batch],
        completions=[
            [{"role": "assistant", "content": s.answer}] for s in synthetic_gt.samples[:50]
        ],
        **{
            k: [r[k] for r in batch]
            for k in ("ground_truth", "task", "dataset", "benchmark", "media")
        },
    )
    assert all(isinstance(v, float) and 0 < v <= 1 for v in got)
    scored = compute_score_batch(
        [r["data_source"] for r in verl_rows[:20]],
        ["nothing"] * 20,
        [r["reward_model"]["ground_truth"] for r in verl_rows[:20]],
        [r["extra_info"] for r in verl_rows[:20]],
        stats=str(tmp_path / "stats.json"),
    )
    assert [s["score"] for s in scored] == [0.0] * 20  # gated localisation, nothing readable


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--style", "openrlhf"], "unknown style 'openrlhf'"),
        (["--tasks", "stg,dance"], "unknown task(s) dance"),
    ],
)
def test_prepare_refuses_bad_options(
    synthetic: dict[str, Path], tmp_path: Path, args: list[str], message: str
) -> None:
    result = runner.invoke(
        app,
        [
            "rewards",
            "prepare",
            str(synthetic["ground_truth"]),
            "--out",
            str(tmp_path / "x.jsonl"),
            *args,
        ],
    )
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "x.jsonl").exists()


def test_prepare_and_fit_report_bad_files(synthetic: dict[str, Path], tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["rewards", "prepare", str(synthetic["ground_truth"]), "--out", str(tmp_path / "x.csv")],
    )
    assert result.exit_code == 2 and "must name a .jsonl or .parquet file" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text('[{"qa_type": "tal"}]')
    result = runner.invoke(
        app, ["rewards", "prepare", str(bad), "--out", str(tmp_path / "x.jsonl")]
    )
    assert result.exit_code != 0 and "record 0" in result.output
    result = runner.invoke(
        app,
        [
            "rewards",
            "fit",
            str(bad),
            "--ground-truth",
            str(synthetic["ground_truth"]),
            "--out",
            str(tmp_path / "s.json"),
        ],
    )
    assert result.exit_code != 0 and "do not match the ground truth" in result.output
    assert not (tmp_path / "s.json").exists()
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text("")
    result = runner.invoke(
        app,
        [
            "rewards",
            "fit",
            "--rollouts",
            str(rollouts),
            "--ground-truth",
            str(synthetic["ground_truth"]),
            "--out",
            str(tmp_path / "s.json"),
        ],
    )
    assert result.exit_code == 2 and "--ground-truth goes with a prediction file" in result.output
    result = runner.invoke(
        app,
        [
            "rewards",
            "score",
            str(synthetic["strong"]),
            "--ground-truth",
            str(synthetic["ground_truth"]),
            "--stats",
            str(bad),
        ],
    )
    assert result.exit_code != 0 and "not a reward statistics file" in result.output


def test_medsg_rows_and_rewards(tmp_path: Path) -> None:
    from medvidbench import benchmarks

    medsg = benchmarks.get("medsg")
    assert medsg.demo is not None
    files = medsg.demo.synthesise(tmp_path / "syn", 200, 1)
    done = cli(
        "rewards",
        "prepare",
        files["ground_truth"],
        "--out",
        tmp_path / "rows.jsonl",
        "--benchmark",
        "medsg",
    )
    assert done.returncode == 0, done.stderr
    rows = read_rows(tmp_path / "rows.jsonl")
    assert rows[0]["benchmark"] == "medsg" and rows[0]["media"]["images"]
    item = json.loads(rows[0]["ground_truth"])["item"]
    box = ", ".join(str(v) for v in item["answer"])
    got = reward_function()(
        prompts=None, completions=[f"[{box}]", "no box"], ground_truth=[rows[0]["ground_truth"]] * 2
    )
    assert got == [pytest.approx(1.0), 0.0]
