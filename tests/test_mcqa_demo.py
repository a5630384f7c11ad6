"""MCQA-Demo, the third built-in benchmark: a multiple-choice shape, test-only, with the
strict-match / flexible-extract pair side by side; registered like the others and
self-contained (adding it changed no module outside its package)."""

from __future__ import annotations

import ast
import json
import tomllib
from pathlib import Path

import pytest

from medvidbench import benchmarks
from medvidbench.benchmarks.mcqa_demo import ARCHETYPES, BENCHMARK
from medvidbench.benchmarks.mcqa_demo import synth as mcqa_synth
from medvidbench.core.answers.choices import flexible_extract, strict_match
from medvidbench.core.errors import InvalidGroundTruthError
from medvidbench.library import evaluate

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "medvidbench" / "benchmarks" / "mcqa_demo"
OPTIONS = {"A": "Liver", "B": "Pancreas", "C": "Spleen", "D": "Kidney"}


@pytest.mark.parametrize(
    ("text", "strict", "flexible"),
    [
        ("B", "B", "B"),
        ("  (B). ", "B", "B"),
        ("Answer: D", "D", "D"),
        ("answer: (d)", None, "D"),  # strict wants the capital letter; the stated one is read
        ("The answer is a nerve", None, None),  # a small bare letter is a word
        ("b", None, None),  # a bare small letter is no answer under either rule
        ("The answer is (C): Spleen.", None, "C"),
        ("I think the answer is D, the kidney", None, "D"),
        ("A) no, C) yes: so C)", None, "C"),  # the last marked letter
        ("[A]", None, "A"),
        ("Pancreas, I would say.", None, "B"),  # quotes one option's text
        ("Liver or kidney?", None, None),  # quotes two
        ("E", None, None),  # not an option of this item
        ("A nerve is not an organ", None, None),  # a capital word is not a letter
        ("", None, None),
    ],
)
def test_the_two_named_extractions(text: str, strict: str | None, flexible: str | None) -> None:
    assert strict_match(text, "ABCD") == strict
    assert flexible_extract(text, OPTIONS) == flexible


def _question(qid: str, subject: str, answer: str) -> dict[str, object]:
    return {"id": qid, "subject": subject, "question": "?", "options": OPTIONS, "answer": answer}


def test_scores_match_hand_derived_values(tmp_path: Path) -> None:
    gt = tmp_path / "gt.json"
    gt.write_text(
        json.dumps(
            [
                _question("q1", "anatomy", "B"),
                _question("q2", "anatomy", "C"),
                _question("q3", "physiology", "D"),
                _question("q4", "physiology", "A"),
                _question("q5", "physiology", "B"),
            ]
        )
    )
    answers = {
        "q1": "B",  # strict right, flexible right
        "q2": "The answer is (C).",  # strict none, flexible right
        "q3": "(A)",  # both read A: both wrong
        "q4": "no idea",  # neither reads anything: unparsed
        "q5": "Pancreas",  # strict none, flexible right (quoted option)
    }
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps(answers))  # the object layout: id -> answer
    report = evaluate(pred, gt, benchmark="mcqa-demo")
    # strict: q1 only -> 1/5; flexible: q1, q2, q5 -> 3/5
    assert report.metrics == {"acc_flexible": 0.6, "acc_strict": 0.2}
    # per subject: anatomy 2/2 and 1/2; physiology 1/3 and 0/3
    tasks = {d: v["tasks"]["mcqa"] for d, v in report.per_dataset.items()}
    assert tasks["anatomy"]["acc_flexible"] == 1.0 and tasks["anatomy"]["acc_strict"] == 0.5
    assert tasks["physiology"]["acc_flexible"] == pytest.approx(1 / 3)
    assert tasks["physiology"]["acc_strict"] == 0.0
    info = report.per_task["mcqa"]
    assert info["parse_rate"] == 0.8 and info["strict_parse_rate"] == 0.4
    assert info["not_scored"] == {}  # every sample counts: an unread answer is wrong


def test_the_demo_archetypes_behave_as_documented(tmp_path: Path) -> None:
    assert BENCHMARK.demo is not None and mcqa_synth.ARCHETYPES == ARCHETYPES
    files = BENCHMARK.demo.synthesise(tmp_path, 400, 2)
    gt = BENCHMARK.load_ground_truth(files["ground_truth"])
    assert len(gt) == 400 and {q.dataset for q in gt.samples} == {
        "anatomy",
        "physiology",
        "vascular",
    }
    m = {a: evaluate(files[a], gt, benchmark="mcqa-demo").metrics for a in ARCHETYPES}
    assert m["perfect"] == {"acc_flexible": 1.0, "acc_strict": 1.0}
    assert m["verbose"]["acc_strict"] == 0.0 and 0.65 < m["verbose"]["acc_flexible"] < 0.85
    assert 0.78 < m["strong"]["acc_strict"] == m["strong"]["acc_flexible"] < 0.92
    assert 0.15 < m["guesser"]["acc_flexible"] < 0.35
    assert m["garbage"] == {"acc_flexible": 0.0, "acc_strict": 0.0}


def test_a_broken_prediction_file_is_reported_not_raised(tmp_path: Path) -> None:
    gt = BENCHMARK.load_ground_truth(json.dumps([_question("q1", "s", "A")]).encode())
    sent = json.dumps(
        [{"id": "q9", "prediction": "A"}, {"id": "q1", "prediction": 3}, {"id": "q1"}]
    )
    matched = BENCHMARK.validate_submission(sent.encode(), gt)
    codes = [p.code for p in matched.report.errors.items]
    assert codes == ["no-such-item", "wrong-type", "wrong-type"]
    assert "expected field 'prediction' to be a string, got int" in str(
        matched.report.errors.items[1].message
    )
    assert matched.report.coverage["mcqa"].status == "missing"


@pytest.mark.parametrize(
    ("record", "code"),
    [
        (
            {"id": "q1", "subject": "s", "question": "?", "options": {"A": "x"}, "answer": "A"},
            "bad-options",
        ),
        (
            {
                "id": "q1",
                "subject": "s",
                "question": "?",
                "options": {"A": "x", "C": "y"},
                "answer": "A",
            },
            "bad-options",
        ),
        (
            {
                "id": "q1",
                "subject": "s",
                "question": "?",
                "options": {"A": "x", "B": "y"},
                "answer": "C",
            },
            "bad-answer",
        ),
        (
            {
                "id": 1,
                "subject": "s",
                "question": "?",
                "options": {"A": "x", "B": "y"},
                "answer": "A",
            },
            "missing-field",
        ),
    ],
)
def test_a_broken_test_set_is_refused_with_every_problem(record: object, code: str) -> None:
    with pytest.raises(InvalidGroundTruthError) as err:
        BENCHMARK.load_ground_truth(json.dumps([record, record]).encode())
    assert [p.code for p in err.value.problems.items] == [code, code]


def test_it_is_registered_through_the_entry_point_group_like_the_built_ins() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    group = project["project"]["entry-points"]["medvidbench.benchmarks"]
    assert group["mcqa-demo"] == "medvidbench.benchmarks.mcqa_demo:BENCHMARK"
    assert {"medvidbench", "medsg"} <= set(group)  # the same mechanism as the others
    assert "mcqa-demo" in benchmarks.slugs()
    assert benchmarks.get("mcqa-demo") is BENCHMARK


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_the_package_is_self_contained_and_nothing_outside_it_names_it() -> None:
    own = "medvidbench.benchmarks.mcqa_demo"
    for module in PACKAGE.glob("*.py"):
        ours = {m for m in _imports(module) if m.startswith("medvidbench")}
        foreign = {m for m in ours if not m.startswith((own, "medvidbench.core"))}
        assert not foreign, f"{module.name} imports {sorted(foreign)}: only the contract may"
    # No module of the package outside this folder knows it: plugging it in took its own
    # folder and its entry-point line (pyproject.toml), nothing else.
    src = ROOT / "src" / "medvidbench"
    naming = [
        str(p.relative_to(src))
        for p in src.rglob("*")
        if p.is_file()
        and PACKAGE not in p.parents
        and p.suffix in (".py", ".html", ".js", ".toml", ".cfg", ".json")
        and ("mcqa" in p.read_text(errors="replace").lower())
    ]
    assert naming == []
