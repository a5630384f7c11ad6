"""The lmms-eval task ``medvidbench export-task lmms-eval`` writes, run the way lmms-eval runs
a task: its YAML loaded with ``!function`` resolved beside it, ``process_results`` called per
document on each rank, the aggregation called once on the gathered items with ``args``. The
submission it writes, and its ``--log_samples`` file through ``medvidbench import``, score
exactly what the same answers score given directly."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import medvidbench.cli.bridges  # noqa: F401  (registers the commands)
from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth
from medvidbench.cli.main import app
from medvidbench.library import evaluate
from tests.toolkit_outputs import lmms_eval_samples

runner = CliRunner()


class _TaskLoader(yaml.SafeLoader):
    """lmms-eval's YAML reading: ``!function module.name`` imports ``module.py`` from the YAML's
    own folder."""


def _function(loader: _TaskLoader, node: yaml.Node) -> Any:
    module, _, name = loader.construct_scalar(node).rpartition(".")  # type: ignore[arg-type]
    path = Path(loader.name).parent / f"{module}.py"
    spec = importlib.util.spec_from_file_location(f"task_{module}", path)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return getattr(loaded, name)


_TaskLoader.add_constructor("!function", _function)


def _load_task(folder: Path) -> dict[str, Any]:
    with (folder / "medvidbench.yaml").open("rb") as fh:
        loader = _TaskLoader(fh)
        loader.name = str(folder / "medvidbench.yaml")
        try:
            config: dict[str, Any] = loader.get_single_data()
        finally:
            loader.dispose()
    return config


@pytest.fixture
def task(synthetic: dict[str, Path], tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path / "task"
    result = runner.invoke(
        app,
        ["export-task", "lmms-eval", str(folder), "--questions", str(synthetic["ground_truth"])],
    )
    assert result.exit_code == 0, result.output
    return folder, _load_task(folder)


def _docs(config: dict[str, Any]) -> list[dict[str, Any]]:
    path = Path(config["dataset_kwargs"]["data_files"]["test"])
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_yaml_names_functions_that_exist(task: tuple[Path, dict[str, Any]]) -> None:
    folder, config = task
    assert config["task"] == "medvidbench" and config["output_type"] == "generate_until"
    assert config["dataset_path"] == "json" and config["test_split"] == "test"
    hooks = ["doc_to_visual", "doc_to_text", "doc_to_target", "process_results"]
    assert all(callable(config[h]) for h in hooks)
    (metric,) = config["metric_list"]
    assert metric["metric"] == "medvidbench_submission" and callable(metric["aggregation"])
    # lmms-eval passes its run arguments to an aggregation that has an 'args' parameter
    assert "args" in inspect.signature(metric["aggregation"]).parameters
    assert Path(config["dataset_kwargs"]["data_files"]["test"]).parent == folder.resolve()


def test_every_document_line_has_one_shape(
    task: tuple[Path, dict[str, Any]], synthetic_gt: GroundTruth
) -> None:
    """Hugging Face's JSON loader needs every field to have one type in every line."""
    docs = _docs(task[1])
    assert len(docs) == len(synthetic_gt)
    shapes = {tuple((k, type(v).__name__) for k, v in d.items()) for d in docs}
    assert len(shapes) == 1
    assert [d["index"] for d in docs] == list(range(len(docs)))
    first = synthetic_gt.samples[0]
    assert (docs[0]["id"], docs[0]["qa_type"]) == (first.sample_id, first.qa_type)
    config = task[1]
    text = config["doc_to_text"](docs[0], config["lmms_eval_specific_kwargs"]["default"])
    assert text == first.question
    assert config["doc_to_visual"](docs[0]) == []  # the synthetic test file names no video


@pytest.mark.parametrize("world_size", [1, 4])
def test_the_task_writes_a_submission_that_scores_like_the_answers(
    task: tuple[Path, dict[str, Any]],
    synthetic: dict[str, Path],
    synthetic_gt: GroundTruth,
    tmp_path: Path,
    world_size: int,
) -> None:
    config = task[1]
    docs = _docs(config)
    answers = [r["prediction"] for r in json.loads(synthetic["strong"].read_text())]
    samples, items = lmms_eval_samples(
        docs,
        answers,
        prompt=lambda d: config["doc_to_text"](d, {}),
        process_results=config["process_results"],
        world_size=world_size,
    )
    aggregate = config["metric_list"][0]["aggregation"]
    out = tmp_path / "out"
    assert aggregate(items, args=Namespace(output_path=str(out))) is None
    (written,) = (out / "submissions").glob("medvidbench-submission-*.json")
    direct = evaluate(synthetic["strong"], synthetic_gt)
    assert evaluate(written, synthetic_gt).metrics == direct.metrics
    # the samples file of the same run converts to the same submission
    jsonl = tmp_path / "2026_samples_medvidbench.jsonl"
    jsonl.write_bytes(samples)
    converted = tmp_path / "converted.json"
    result = runner.invoke(app, ["import", "lmms-eval", str(jsonl), "-o", str(converted)])
    assert result.exit_code == 0, result.output
    assert json.loads(converted.read_text()) == json.loads(written.read_text())


def test_the_aggregation_without_an_output_path_writes_in_the_current_folder(
    task: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = task[1]
    monkeypatch.chdir(tmp_path)
    record = config["process_results"](_docs(config)[0], ["  answer"])
    assert record["medvidbench_submission"]["prediction"] == "  answer"
    config["metric_list"][0]["aggregation"](list(record.values()), args=Namespace(output_path=None))
    (written,) = (tmp_path / "submissions").glob("*.json")
    assert json.loads(written.read_text())[0]["index"] == 0


def test_frames_are_read_under_the_video_folder(
    task: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = task[1]
    monkeypatch.setenv("MEDVIDBENCH_VIDEO_DIR", str(tmp_path))
    doc = {**_docs(config)[0], "video": "clips/a.mp4"}
    assert config["doc_to_visual"](doc) == [os.path.join(str(tmp_path), "clips/a.mp4")]


def test_export_without_questions_says_what_is_missing(tmp_path: Path) -> None:
    result = runner.invoke(app, ["export-task", "lmms-eval", str(tmp_path / "t")])
    assert result.exit_code == 0
    written = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert written == [".medvidbench-export.json", "medvidbench.yaml", "utils.py"]
    assert "run again with --questions" in result.output
    unknown = runner.invoke(app, ["export-task", "nope", str(tmp_path / "u")])
    assert unknown.exit_code == 2 and "has no task for 'nope'" in unknown.output
