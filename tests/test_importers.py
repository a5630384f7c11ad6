"""The lmms-eval and VLMEvalKit importers on files shaped as those toolkits write them: every
import scores exactly what the same answers score in test-file order."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth
from medvidbench.benchmarks.medvidbench.importers import IMPORTERS, question_view
from medvidbench.core.errors import InvalidSubmissionError
from medvidbench.library import evaluate
from tests.toolkit_outputs import (
    lmms_eval_samples,
    vlmevalkit_json,
    vlmevalkit_table,
    vlmevalkit_tsv,
    vlmevalkit_xlsx,
)


def _test_file(synthetic: dict[str, Path]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(synthetic["ground_truth"].read_text())
    return records


def _public(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The public questions file: the test file without answers."""
    return [
        {
            "metadata": r["metadata"],
            "qa_type": r["qa_type"],
            "conversations": [t for t in r["conversations"] if t["from"] == "human"],
        }
        for r in records
    ]


def _answers(synthetic: dict[str, Path], archetype: str = "strong") -> list[str]:
    return [r["prediction"] for r in json.loads(synthetic[archetype].read_text())]


def _same_scores(
    imported: list[dict[str, Any]], synthetic: dict[str, Path], gt: GroundTruth
) -> None:
    direct = evaluate(synthetic["strong"], gt)
    through = evaluate(json.dumps(imported).encode(), gt)
    assert through.metrics == direct.metrics
    assert through.per_dataset == direct.per_dataset
    assert through.metrics["cvs_acc"] is not None and 0 < through.metrics["stg_miou"] < 1


def _generic_doc(record: dict[str, Any]) -> dict[str, Any]:
    """A document of somebody's own lmms-eval task over the test file (not ours)."""
    return {k: v for k, v in record.items() if k != "struc_info"}


def _prompt(doc: dict[str, Any]) -> str:
    question = doc["conversations"][0]["value"].replace("<video>\n", "")
    return f"{question}\nAnswer concisely."


@pytest.mark.parametrize("version", [(0, 7), (0, 4), (0, 3)])
@pytest.mark.parametrize("world_size", [1, 3])
def test_lmms_eval_samples_of_any_task_import_exactly(
    synthetic: dict[str, Path],
    synthetic_gt: GroundTruth,
    version: tuple[int, int],
    world_size: int,
) -> None:
    records = _test_file(synthetic)
    docs = [_generic_doc(r) for r in records]
    data, _ = lmms_eval_samples(
        docs, _answers(synthetic), prompt=_prompt, world_size=world_size, version=version
    )
    if world_size > 1:  # the ranks' samples arrive one rank after another
        assert json.loads(data.splitlines()[1])["doc_id"] == world_size
    imported = IMPORTERS["lmms-eval"].to_submission(
        data, filename="x_samples_medvidbench.jsonl", questions=_public(records)
    )
    assert [r["index"] for r in imported] == list(range(len(records)))
    assert set(imported[0]) == {"index", "id", "qa_type", "prediction"}
    _same_scores(imported, synthetic, synthetic_gt)


def test_lmms_eval_without_questions_gives_index_only_records(
    synthetic: dict[str, Path], synthetic_gt: GroundTruth
) -> None:
    docs = [_generic_doc(r) for r in _test_file(synthetic)]
    data, _ = lmms_eval_samples(docs, _answers(synthetic), prompt=_prompt, world_size=2)
    imported = IMPORTERS["lmms-eval"].to_submission(data, filename="s.jsonl", questions=None)
    assert set(imported[0]) == {"index", "prediction"}
    _same_scores(imported, synthetic, synthetic_gt)


def test_lmms_eval_samples_out_of_the_test_files_order_are_refused(
    synthetic: dict[str, Path],
) -> None:
    """A task that filtered or reordered its documents: doc_id is no test-file position."""
    records = _test_file(synthetic)
    docs = [_generic_doc(r) for r in records]
    random.Random(3).shuffle(docs)
    data, _ = lmms_eval_samples(docs, _answers(synthetic), prompt=_prompt)
    with pytest.raises(InvalidSubmissionError) as info:
        IMPORTERS["lmms-eval"].to_submission(data, filename="s.jsonl", questions=records)
    assert re.match(
        r"invalid submission 's.jsonl': \d+ of 600 answers are not about the question at their "
        r"index in the test file; the samples' doc_ids do not follow the test file's order",
        info.value.message,
    )
    first = info.value.to_dict()["problems"][1]["message"]
    assert first.startswith("line 1 (doc_id 0): its question is")
    assert "but question 0 of the test file has" in first


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"{not json", "line 1: not a JSON object"),
        (b'{"filtered_resps": "x"}', "line 1: expected an integer 'doc_id', got None"),
        (b'{"doc_id": 0, "filtered_resps": [[]]}', "line 1 (doc_id 0): no answer text"),
        (b'{"doc_id": 99999, "filtered_resps": "x"}', "index 99999 is outside the test file"),
    ],
)
def test_lmms_eval_bad_lines_are_located(
    synthetic: dict[str, Path], line: bytes, message: str
) -> None:
    with pytest.raises(InvalidSubmissionError) as info:
        IMPORTERS["lmms-eval"].to_submission(
            line + b"\n", filename="s.jsonl", questions=_test_file(synthetic)
        )
    assert message in info.value.message


def test_a_second_answer_for_one_doc_is_refused() -> None:
    line = b'{"doc_id": 0, "filtered_resps": "x"}\n'
    with pytest.raises(InvalidSubmissionError) as info:
        IMPORTERS["lmms-eval"].to_submission(line * 2, filename="s.jsonl", questions=None)
    assert "line 2 (doc_id 0): a second answer for question 0 (first: record 0)" in str(info.value)


def _vlmevalkit_rows(records: list[dict[str, Any]], shuffle: bool) -> list[dict[str, Any]]:
    """A VLMEvalKit dataset built from the test file: index = the position in it."""
    view = question_view(records)
    rows = [
        {
            "index": q.index,
            "video": q.sample_id.split("&&")[0],
            "question": q.asked,
            "qa_type": q.qa_type,
        }
        for q in view
    ]
    if shuffle:
        random.Random(5).shuffle(rows)
    return rows


@pytest.mark.parametrize("kind", ["xlsx", "tsv", "json"])
@pytest.mark.parametrize("with_questions", [True, False])
def test_vlmevalkit_files_import_exactly(
    synthetic: dict[str, Path],
    synthetic_gt: GroundTruth,
    tmp_path: Path,
    kind: str,
    with_questions: bool,
) -> None:
    records = _test_file(synthetic)
    answers = dict(enumerate(_answers(synthetic)))
    header, body = vlmevalkit_table(_vlmevalkit_rows(records, shuffle=True), answers)
    data = {
        "xlsx": lambda: vlmevalkit_xlsx(header, body, tmp_path / "M_MedVidBench.xlsx"),
        "tsv": lambda: vlmevalkit_tsv(header, body),
        "json": lambda: vlmevalkit_json(header, body),
    }[kind]()
    imported = IMPORTERS["vlmevalkit"].to_submission(
        data,
        filename=f"M_MedVidBench.{kind}",
        questions=_public(records) if with_questions else None,
    )
    assert [r["index"] for r in imported] == list(range(len(records)))
    _same_scores(imported, synthetic, synthetic_gt)


def test_vlmevalkit_index_off_by_one_is_refused(synthetic: dict[str, Path]) -> None:
    records = _test_file(synthetic)
    rows = _vlmevalkit_rows(records, shuffle=False)
    for r in rows:
        r["index"] += 1  # a dataset numbered from 1
    header, body = vlmevalkit_table(rows, {i + 1: "x" for i in range(len(rows))})
    with pytest.raises(InvalidSubmissionError) as info:
        IMPORTERS["vlmevalkit"].to_submission(
            vlmevalkit_tsv(header, body), filename="p.tsv", questions=records
        )
    problems = info.value.to_dict()["problems"]
    assert re.match(
        r"\d+ of 599 answers are not about the question at their index", problems[0]["message"]
    )
    assert problems[1]["message"].startswith("row 2 (index 1): its qa_type is")
    assert "index 600 is outside the test file of 600 questions" in str(info.value.to_dict())


def test_vlmevalkit_without_the_columns_says_which_it_found() -> None:
    with pytest.raises(InvalidSubmissionError) as info:
        IMPORTERS["vlmevalkit"].to_submission(b"a\tb\n1\t2\n", filename="p.tsv", questions=None)
    assert "expected the columns 'index' and 'prediction', found a, b" in info.value.message


def test_xlsx_without_openpyxl_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from medvidbench.core.errors import UsageError

    monkeypatch.setitem(sys.modules, "openpyxl", None)  # import openpyxl -> ImportError
    with pytest.raises(UsageError, match=r"pip install openpyxl \(the xlsx extra\)"):
        IMPORTERS["vlmevalkit"].to_submission(b"PK\x03\x04", filename="p.xlsx", questions=None)


def test_the_import_command_writes_a_submission_that_scores_the_same(
    synthetic: dict[str, Path], synthetic_gt: GroundTruth, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    import medvidbench.cli.bridges  # noqa: F401  (registers the commands)
    from medvidbench.cli.main import app

    runner = CliRunner()
    records = _test_file(synthetic)
    header, body = vlmevalkit_table(
        _vlmevalkit_rows(records, shuffle=True), dict(enumerate(_answers(synthetic)))
    )
    xlsx = tmp_path / "MyModel_MedVidBench.xlsx"
    vlmevalkit_xlsx(header, body, xlsx)
    out = tmp_path / "submission.json"
    gt = str(synthetic["ground_truth"])
    done = runner.invoke(
        app, ["import", "vlmevalkit", str(xlsx), "--questions", gt, "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    assert f"wrote {len(records):,} answers, keyed by test-file index" in done.output
    assert (
        evaluate(out, synthetic_gt).metrics == evaluate(synthetic["strong"], synthetic_gt).metrics
    )
    piped = runner.invoke(
        app, ["import", "vlmevalkit", "-", "-o", str(tmp_path / "p.json")], input=xlsx.read_bytes()
    )
    assert piped.exit_code == 0 and "without --questions" in piped.output
    assert json.loads((tmp_path / "p.json").read_text())[0] == {
        "index": 0,
        "qa_type": records[0]["qa_type"],
        "prediction": _answers(synthetic)[0],
    }
    bad_questions = tmp_path / "q.json"
    bad_questions.write_text("{")
    for args, code in (
        (["import", "nope", str(xlsx), "-o", str(out)], 2),
        (["import", "lmms-eval", str(xlsx), "-o", str(out)], 4),
        (["import", "vlmevalkit", str(xlsx), "--questions", str(bad_questions), "-o", str(out)], 5),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == code, (args, result.output)
