"""docs/rewards.md's verl recipe run through verl 0.9.1 itself: the documented `rewards prepare`
commands, the documented `main_ppo` settings composed by verl's own Hydra configuration, verl's
RLHF dataset reading the prepared rows (placeholders and pixels), and verl's reward loop
(`RewardLoopWorker` with the `naive` manager, loading our reward function as `main_ppo` does)
scoring known answers exactly as the `Rewarder` does. verl, Ray, Hydra and tensordict come from
tests/training-requirements.txt (`./install.sh --test`); without them these tests are skipped
on a developer's machine and fail under CI=true.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import medvidbench.cli.rewards  # noqa: F401  (main adds its command group)
import medvidbench.rewards.verl as adapter
from medvidbench.benchmarks.medvidbench import BENCHMARK as MEDVIDBENCH
from medvidbench.benchmarks.medvidbench.synth import write_synthetic
from medvidbench.cli.main import app
from medvidbench.rewards import Rewarder, fit

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rewards.md"
MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
LEGACY = re.compile(r"^\+{0,2}(custom_reward_function\.|reward_model\.)")


def _need_verl() -> Any:
    try:
        import hydra  # noqa: F401
        import ray  # noqa: F401
        import tensordict  # noqa: F401
        import verl
    except ImportError as exc:
        message = (
            f"verl's stack is missing ({exc}); ./install.sh --test installs it "
            "(tests/training-requirements.txt)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    assert verl.__version__ == "0.9.1", verl.__version__
    return verl


# --- the documented recipe --------------------------------------------------------------------


def _verl_section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    return text.split("\n## verl\n", 1)[1].split("\n## ", 1)[0]


def _blocks() -> list[list[str]]:
    """The verl section's shell blocks, each as its commands (continuation lines joined)."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", _verl_section(), flags=re.S):
        out.append([line for line in block.replace("\\\n", " ").splitlines() if line.strip()])
    return out


def _overrides(commands: list[str]) -> list[str]:
    main = next(c for c in commands if c.startswith("python -m verl.trainer.main_ppo"))
    return shlex.split(main)[3:]


def _substitute(overrides: list[str], reward_file: str, pwd: Path, model: Path) -> list[str]:
    out = []
    for o in overrides:
        o = o.replace("$REWARD_FILE", reward_file).replace("$PWD", str(pwd))
        if o.startswith("actor_rollout_ref.model.path="):
            assert o == f"actor_rollout_ref.model.path={MODEL}"
            o = f"actor_rollout_ref.model.path={model}"  # a local tokenizer: no download
        out.append(o)
    return out


def _compose(verl: Any, overrides: list[str]) -> Any:
    from hydra import compose, initialize_config_dir

    # main_ppo's own: @hydra.main(config_path="config", config_name="ppo_trainer")
    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose("ppo_trainer", overrides=overrides)


def test_the_recipe_uses_the_current_names_and_names_the_old_ones() -> None:
    recipe, older = _blocks()
    current = _overrides(recipe)
    assert not [o for o in current if LEGACY.match(o)]
    assert "reward.reward_manager.name=naive" in current
    assert "reward.custom_reward_function.name=compute_score" in current
    assert {o for o in _overrides(older) if LEGACY.match(o)} == set(_overrides(older))
    section = _verl_section()
    for old in ("custom_reward_function.path", "reward_model.reward_manager"):
        assert f"`{old}" in section.split("**Older releases.**", 1)[1]


# --- fixtures: a local tokenizer, a training file naming its frames ---------------------------


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-level tokenizer built here (decode(encode(text)) == text for any text), saved as
    a model folder verl's hf_tokenizer loads."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["<|endoftext|>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    eos = "<|endoftext|>"
    folder = tmp_path_factory.mktemp("tokenizer")
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, pad_token=eos).save_pretrained(
        folder
    )
    return folder


def _with_frames(ground_truth: Path, out: Path) -> list[dict[str, Any]]:
    """The synthetic test file with each record's clip named by its frames (relative paths),
    as MedVidBench's files name them in `video`."""
    data = json.loads(ground_truth.read_text())
    records = list(data.values()) if isinstance(data, dict) else data
    for n, rec in enumerate(records):
        vid = rec["metadata"]["video_id"]
        rec["video"] = [f"frames/{vid}/{n}_{k}.jpg" for k in range(3)]
    out.write_text(json.dumps(records))
    return records


class _Processor:
    """Stands in for a vision model's processor: verl's dataset only requires one to exist
    before it places videos and images (it calls none of its methods here)."""


def test_documented_recipe_through_verl(
    synthetic: dict[str, Path], synthetic_gt: Any, tokenizer_dir: Path, tmp_path: Path
) -> None:
    verl = _need_verl()
    recipe, _ = _blocks()
    records = _with_frames(synthetic["ground_truth"], tmp_path / "train.json")
    media = tmp_path / "media"
    runner = CliRunner()
    for command in (c for c in recipe if c.startswith("medvidbench rewards prepare")):
        argv = shlex.split(command)[1:]
        argv = [
            str(tmp_path / a)
            if a.endswith((".json", ".parquet"))
            else str(media)
            if a == "/data/medvidbench"
            else a
            for a in argv
        ]
        argv[2] = str(tmp_path / "train.json")  # train.json and val.json: the same file here
        done = runner.invoke(app, argv)
        assert done.exit_code == 0, done.output
        assert "reward.custom_reward_function.path=" in done.stderr
        assert "reward_model.reward_manager" in done.stderr  # the old names, named
    # statistics from a smaller reference set (fitting is the slow part; any statistics do)
    small = write_synthetic(tmp_path / "reference", samples=120, seed=11)
    fit(small["weak"], small["ground_truth"], benchmark="medvidbench").save(tmp_path / "stats.json")
    line = next(c for c in recipe if c.startswith("REWARD_FILE=$("))
    found = subprocess.run(
        line.removeprefix("REWARD_FILE=$(").removesuffix(")"),
        shell=True,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )
    reward_file = found.stdout.strip()
    assert Path(reward_file).samefile(adapter.__file__)
    config = _compose(verl, _substitute(_overrides(recipe), reward_file, tmp_path, tokenizer_dir))
    assert config.reward.custom_reward_function.path == reward_file
    assert config.data.train_files == "train.parquet"

    # verl's RLHF dataset reads the prepared Parquet file: placeholders become the videos
    from verl.utils import hf_tokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    tokenizer = hf_tokenizer(str(tokenizer_dir))
    dataset = RLHFDataset(
        data_files=[str(tmp_path / "train.parquet")],
        tokenizer=tokenizer,
        config=config.data,
        processor=_Processor(),
    )
    assert len(dataset) == len(synthetic_gt)
    rows = [dataset[i] for i in range(len(dataset))]
    for row in rows[:50]:
        sample = synthetic_gt.samples[row["extra_info"]["index"]]
        assert row["data_source"] == f"medvidbench/{sample.task}"
        video, text = row["raw_prompt"][0]["content"]
        frames = records[sample.index]["video"]
        assert video == {
            "type": "video",
            "video": [os.path.join(media, f) for f in frames],
            "sample_fps": sample.fps,  # the rate the frames were sampled at (0.2-1.0 here)
        }
        assert text == {"type": "text", "text": "\n" + sample.question}
    # the same rows as .jsonl, which verl reads too
    done = _prepare(
        tmp_path / "train.json",
        "--style",
        "verl",
        "--media-dir",
        media,
        "--out",
        tmp_path / "train.jsonl",
    )
    assert done.exit_code == 0, done.output
    jsonl = RLHFDataset(
        data_files=[str(tmp_path / "train.jsonl")],
        tokenizer=tokenizer,
        config=config.data,
        processor=_Processor(),
    )
    assert [jsonl[i]["raw_prompt"] for i in range(20)] == [r["raw_prompt"] for r in rows[:20]]

    # verl's reward loop scores known answers as the Rewarder does
    from verl.experimental.reward_loop import RewardLoopWorker

    picked = _one_of_each(rows, synthetic_gt, synthetic)
    answers = [a for _, a in picked]
    worker = RewardLoopWorker(config)  # in training, a Ray actor of this class
    assert type(worker.reward_manager).__name__ == "NaiveRewardManager"
    outputs = worker.loop.run_until_complete(
        worker.compute_score_batch(_batch(tokenizer, [r for r, _ in picked], answers))
    )
    gts = [r["reward_model"]["ground_truth"] for r, _ in picked]
    rewarder = Rewarder(str(tmp_path / "stats.json"))
    alone = [rewarder.score([a], [g]) for a, g in zip(answers, gts, strict=True)]
    assert [o["reward_score"] for o in outputs] == [float(r.reward[0]) for r in alone]
    together = rewarder.score(answers, gts)
    np.testing.assert_allclose([o["reward_score"] for o in outputs], together.reward, atol=1e-9)
    assert len({o["reward_score"] for o in outputs}) > 5  # not one value for everything
    for out, one in zip(outputs, alone, strict=True):
        info = out["reward_extra_info"]
        assert tuple(info) == adapter.KEYS  # the same keys on every row
        assert info["raw"] == float(one.raw[0])
        for term in adapter.TERMS:
            _same(info[f"raw_{term}"], float(one.terms[term][0]))
            _same(info[f"normalised_{term}"], float(one.normalised[term][0]))


def _same(a: float, b: float) -> None:
    assert (math.isnan(a) and math.isnan(b)) or a == b, (a, b)


def _one_of_each(
    rows: list[dict[str, Any]], gt: Any, synthetic: dict[str, Path]
) -> list[tuple[dict[str, Any], str]]:
    """Per task, three rows with known answers: the reference's own, the strong archetype's
    and an empty one."""
    strong = MEDVIDBENCH.validate_submission(synthetic["strong"], gt).predictions
    out: list[tuple[dict[str, Any], str]] = []
    seen: dict[str, int] = {}
    for row in rows:
        sample = gt.samples[row["extra_info"]["index"]]
        n = seen.get(sample.task, 0)
        if n < 3:
            answer = (sample.answer, strong[sample.index] or "", "")[n]
            out.append((row, answer))
            seen[sample.task] = n + 1
    assert len(seen) == 8
    return out


def _batch(tokenizer: Any, rows: list[dict[str, Any]], answers: list[str]) -> Any:
    """A rollout batch as verl's agent loop hands it to the reward loop: prompts, responses
    (right-padded) and their attention mask, and the rows' non-tensor columns."""
    import torch
    from verl import DataProto

    ids = [tokenizer.encode(a, add_special_tokens=False) for a in answers]
    assert [tokenizer.decode(i, skip_special_tokens=True) for i in ids] == answers
    width = max(len(i) for i in ids) + 1
    responses = torch.full((len(ids), width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for n, i in enumerate(ids):
        responses[n, : len(i)] = torch.tensor(i, dtype=torch.long)
        mask[n, : len(i)] = 1
    prompts = torch.full((len(ids), 4), tokenizer.pad_token_id, dtype=torch.long)
    return DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": responses,
            "attention_mask": torch.cat([torch.ones_like(prompts), mask], dim=1),
        },
        non_tensors={
            key: np.array([r[key] for r in rows], dtype=object)
            for key in ("data_source", "reward_model", "extra_info")
        },
    )


def test_old_setting_names_leave_verl_on_its_default_scorer(
    synthetic_gt: Any, tokenizer_dir: Path, tmp_path: Path
) -> None:
    """What docs/rewards.md warns about: verl 0.9.1 composes the old names without complaint
    and never reads them; its reward loop then stops on our rows."""
    verl = _need_verl()
    _, older = _blocks()
    overrides = _substitute(_overrides(older), adapter.__file__, tmp_path, tokenizer_dir)
    config = _compose(verl, [*overrides, f"actor_rollout_ref.model.path={tokenizer_dir}"])
    assert config.custom_reward_function.path == adapter.__file__  # accepted ...
    assert config.reward.custom_reward_function.path is None  # ... and not read
    from verl.experimental.reward_loop import RewardLoopWorker
    from verl.utils import hf_tokenizer

    from medvidbench.rewards import ground_truth_column

    sample = next(s for s in synthetic_gt.samples if s.task == "stg")
    row = {
        "data_source": "medvidbench/stg",
        "reward_model": {
            "style": "rule",
            "ground_truth": ground_truth_column(MEDVIDBENCH, sample, {}),
        },
        "extra_info": {"index": sample.index},
    }
    worker = RewardLoopWorker(config)
    batch = _batch(hf_tokenizer(str(tokenizer_dir)), [row], [sample.answer])
    with pytest.raises(NotImplementedError, match="data_source='medvidbench/stg'"):
        worker.loop.run_until_complete(worker.compute_score_batch(batch))


# --- the rows themselves (no verl needed) -----------------------------------------------------


def _prepare(*args: str | Path) -> Any:
    return CliRunner().invoke(app, ["rewards", "prepare", *map(str, args)])


def test_medsg_rows_carry_their_images_behind_placeholders(tmp_path: Path) -> None:
    from medvidbench.benchmarks.medsg.synth import generate_ground_truth

    records = generate_ground_truth(40, seed=3)
    (tmp_path / "medsg.json").write_text(json.dumps(records))
    out = tmp_path / "rows.jsonl"
    done = _prepare(
        tmp_path / "medsg.json",
        "--style",
        "verl",
        "--benchmark",
        "medsg",
        "--out",
        out,
        "--media-dir",
        tmp_path / "img",
    )
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(records)
    for row, rec in zip(rows, records, strict=True):
        assert row["data_source"] == f"medsg/{rec['task']}"
        assert row["images"] == [str(tmp_path / "img" / p) for p in rec["images"]]
        assert row["videos"] == []
        content = row["prompt"][0]["content"]
        assert content == "<image>" * len(rec["images"]) + "\n" + rec["question"]


def test_a_record_without_media_gets_no_placeholder(
    synthetic: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "rows.jsonl"
    assert _prepare(synthetic["ground_truth"], "--style", "verl", "--out", out).exit_code == 0
    row = json.loads(out.read_text().splitlines()[0])
    assert row["videos"] == [] and "<video>" not in row["prompt"][0]["content"]


def test_video_files_and_relative_paths(synthetic: dict[str, Path], tmp_path: Path) -> None:
    data = json.loads(synthetic["ground_truth"].read_text())
    records = list(data.values()) if isinstance(data, dict) else data
    for n, rec in enumerate(records):
        rec["video"] = f"clips/{n}.mp4" if n % 2 else f"/abs/clips/{n}.mp4"
    (tmp_path / "gt.json").write_text(json.dumps(records))
    out = tmp_path / "rows.parquet"
    done = _prepare(tmp_path / "gt.json", "--style", "verl", "--out", out, "--media-dir", "/m")
    assert done.exit_code == 0, done.output
    import pyarrow.parquet as pq

    rows = pq.read_table(out).to_pylist()
    fps = [float(r["metadata"]["fps"]) for r in records[:2]]
    assert rows[0]["videos"] == [{"video": "/abs/clips/0.mp4", "fps": fps[0]}]
    assert rows[1]["videos"] == [{"video": "/m/clips/1.mp4", "fps": fps[1]}]
    assert rows[1]["prompt"][0]["content"].startswith("<video>\n")
    # a record that gives the clip's times in its video file: read from there to there
    records[2]["metadata"] |= {"input_video_start_time": "12.5", "input_video_end_time": "72.5"}
    records[3]["metadata"] |= {"input_video_start_time": "9", "input_video_end_time": "3"}
    (tmp_path / "timed.json").write_text(json.dumps(records))
    done = _prepare(tmp_path / "timed.json", "--style", "verl", "--out", tmp_path / "t.jsonl")
    assert done.exit_code == 0, done.output
    timed = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert timed[2]["videos"][0] | {"video": ""} == {
        "video": "", "fps": float(records[2]["metadata"]["fps"]),
        "video_start": 12.5, "video_end": 72.5,
    }  # fmt: skip
    assert "video_start" not in timed[3]["videos"][0]  # an end before its start: no range
    # video files and frame lists in one file cannot share a Parquet column: said, not a crash
    records[0]["video"] = ["f/0.jpg", "f/1.jpg"]
    (tmp_path / "mixed.json").write_text(json.dumps(records))
    done = _prepare(tmp_path / "mixed.json", "--style", "verl", "--out", tmp_path / "m.parquet")
    assert done.exit_code == 2 and "can be written as .jsonl" in done.output
    assert not (tmp_path / "m.parquet").exists() and not (tmp_path / "m.parquet.part").exists()


def test_parquet_without_pyarrow_names_the_extra(
    synthetic: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    done = _prepare(synthetic["ground_truth"], "--style", "verl", "--out", tmp_path / "r.parquet")
    assert done.exit_code == 2
    assert "pip install pyarrow" in done.output
    assert not (tmp_path / "r.parquet").exists()


def test_the_training_stack_is_pinned_and_installed_by_install_sh() -> None:
    root = DOCS.parents[1]
    pins = {}
    for name in ("training-requirements.txt", "training-nodeps-requirements.txt"):
        for line in (root / "tests" / name).read_text().splitlines():
            requirement = line.split("#", 1)[0].strip()
            if requirement:
                assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", requirement), line
                package, version = requirement.split("==")
                pins[package.lower()] = version
    assert pins["torch"] == "2.13.0" and pins["trl"] == "1.16.0" and pins["verl"] == "0.9.1"
    script = (root / "install.sh").read_text()
    assert "-r tests/training-requirements.txt" in script
    assert "--no-deps -r tests/training-nodeps-requirements.txt" in script


def test_scoring_options_reach_the_rewards_as_verl_hands_them_over(tmp_path: Path) -> None:
    """``options`` written as a mapping in an override arrives as OmegaConf's DictConfig (verl's
    ``get_custom_reward_fn`` copies only the top level of ``reward_kwargs``), which the reward
    function once could not write as JSON (TypeError on every call); written as JSON, as text.
    Either way it scores as the Rewarder with the same options does."""
    verl = _need_verl()
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from medvidbench import benchmarks
    from medvidbench.benchmarks.medsg.synth import write_synthetic as medsg_synthetic
    from medvidbench.rewards.rows import ground_truth_column, spec_of

    bench = benchmarks.get("medsg")
    gt = bench.load_ground_truth(medsg_synthetic(tmp_path / "medsg", 40, 3)["ground_truth"])
    items = list(gt.samples)[:6]
    extras = spec_of(bench).row_extras(items)
    truths = [ground_truth_column(bench, i, e) for i, e in zip(items, extras, strict=True)]
    answers = ["[100, 120, 500, 640]", "(10,10),(900,900)", "[0, 0, 999, 999]"] * 2
    options = {"medsg": {"coordinates": "0-1000"}}
    expected = Rewarder(options=options).score(answers, truths).reward
    assert not np.array_equal(expected, Rewarder().score(answers, truths).reward)  # it matters
    for written in ("{medsg:{coordinates:0-1000}}", "'" + json.dumps(options) + "'"):
        config = _compose(
            verl,
            [
                f"reward.custom_reward_function.path={adapter.__file__}",
                "reward.custom_reward_function.name=compute_score",
                f"+reward.custom_reward_function.reward_kwargs.options={written}",
            ],
        )
        score = get_custom_reward_fn(config)
        assert score is not None
        got = [
            score(data_source=f"medsg/{i.task}", solution_str=a, ground_truth=t, extra_info={})
            for i, a, t in zip(items, answers, truths, strict=True)
        ]
        assert [g["score"] for g in got] == [float(v) for v in expected], written
