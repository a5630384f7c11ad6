"""The benchmark seam: a benchmark defined only in the test suite (tests/plugins/tallybench.py),
installed through the entry-point group, works with no change to core, server or CLI code."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from medvidbench import benchmarks
from medvidbench.core.errors import InvalidGroundTruthError, UsageError
from medvidbench.core.ranking import rank_rows
from medvidbench.core.scoring import TaskResult
from medvidbench.library import evaluate
from tests.plugins.install import ROOT, install_tallybench


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = install_tallybench(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("MEDVIDBENCH_BENCHMARK", raising=False)
    benchmarks.forget()
    yield site
    benchmarks.forget()


def _cli(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "src"), str(ROOT)])}
    env.pop("MEDVIDBENCH_BENCHMARK", None)
    env["COLUMNS"] = "200"  # one table row per line
    return subprocess.run(
        [sys.executable, "-m", "medvidbench", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_both_benchmarks_are_discovered_through_the_entry_point_group(installed: Path) -> None:
    assert "tallybench" in benchmarks.slugs() and "medvidbench" in benchmarks.slugs()
    assert benchmarks.slugs() == sorted(benchmarks.slugs())
    tally = benchmarks.get("tallybench")
    assert tally.title == "TallyBench" and tally.scorer_version == "0.1.0"
    assert benchmarks.get("medvidbench").scorer_version != tally.scorer_version
    # with two installed and none configured, the default stays MedVidBench
    assert benchmarks.default_slug() == "medvidbench"


def test_the_default_is_the_only_benchmark_or_the_configured_one(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDVIDBENCH_BENCHMARK", "tallybench")
    assert benchmarks.get().slug == "tallybench"


def test_an_unknown_slug_names_the_installed_benchmarks(installed: Path) -> None:
    named = ", ".join(benchmarks.slugs())
    assert "tallybench" in named
    with pytest.raises(UsageError, match=f"installed benchmarks: {re.escape(named)}$"):
        benchmarks.get("spinebench")


def test_discovery_is_cached_and_the_cache_follows_sys_path(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = benchmarks.discovered()
    benchmarks.forget()

    def no_scan() -> dict[str, str]:
        raise AssertionError("the cached index should have answered")

    monkeypatch.setattr(benchmarks, "_scan", no_scan)
    assert benchmarks.discovered() == first  # from the index file, no metadata scan
    benchmarks.forget()
    # a folder that publishes nothing (a script's own folder, say) leaves the index valid
    (tmp_path / "scripts").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path / "scripts"))
    assert benchmarks.discovered() == first
    benchmarks.forget()
    (tmp_path / "another-site" / "plugin-1.0.dist-info").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path / "another-site"))
    with pytest.raises(AssertionError, match="cached index"):
        benchmarks.discovered()  # a new sys.path entry with packages invalidates the index


def test_the_discovery_index_lives_in_the_cache_folder_and_must_be_the_users_own(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written inside MEDVIDBENCH_CACHE_DIR (not beside it, where a shared folder such as /tmp
    would take it), private; an index others may write is not read."""
    monkeypatch.setenv("MEDVIDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    benchmarks.forget()
    first = benchmarks.discovered()
    index = tmp_path / "cache" / "benchmarks.json"
    assert index.is_file() and not (tmp_path / "benchmarks.json").exists()
    assert index.stat().st_mode & 0o777 == 0o600
    planted = json.loads(index.read_text())
    planted["benchmarks"] = {slug: "os:path" for slug in planted["benchmarks"]}
    index.write_text(json.dumps(planted))
    index.chmod(0o666)  # as a file another user made would be
    benchmarks.forget()
    assert benchmarks.discovered() == first  # scanned again, not read
    index.chmod(0o600)
    index.write_text(json.dumps(planted))
    benchmarks.forget()
    assert benchmarks.discovered() == planted["benchmarks"]  # the user's own index is read
    benchmarks.forget()


def test_offline_evaluation_through_the_library(installed: Path, tmp_path: Path) -> None:
    tally = benchmarks.get("tallybench")
    assert tally.demo is not None
    files = tally.demo.synthesise(tmp_path / "set", 30, 1)
    exact = evaluate(files["predictions_exact"], files["ground_truth"], benchmark="tallybench")
    sloppy = evaluate(files["predictions_sloppy"], files["ground_truth"], benchmark=tally)
    assert exact.benchmark == "tallybench" and exact.profile == "tally-v1"
    assert exact.scorer_version == "0.1.0"
    assert exact.metrics == {"count_err": 0.0, "present_acc": 1.0}
    assert set(sloppy.metrics) == {"count_err", "present_acc"}
    assert sloppy.metrics["count_err"] is not None and sloppy.metrics["count_err"] > 0.2
    # per-sample results are kept: one per item, in the scorer's own metric
    assert exact.per_task["count"]["count"] == 30


def test_ranking_follows_the_metric_direction(installed: Path) -> None:
    tally = benchmarks.get("tallybench")
    rows = [
        ("a", "Many errors", {"count_err": 0.4, "present_acc": 0.9}),
        ("b", "Few errors", {"count_err": 0.1, "present_acc": 0.9}),
    ]
    ranked = rank_rows(rows, tally.metrics)
    assert [r.name for r in ranked] == ["Few errors", "Many errors"]
    assert ranked[0].metric_ranks["count_err"] == 1


def test_a_broken_ground_truth_stops_with_located_problems(installed: Path) -> None:
    tally = benchmarks.get("tallybench")
    bad = json.dumps([{"case": "c1", "task": "count", "answer": "2"}, {"case": "c2"}]).encode()
    with pytest.raises(InvalidGroundTruthError, match="record 1: needs string case"):
        tally.load_ground_truth(bad)


def test_a_metric_the_definition_does_not_declare_is_an_error_not_a_silent_drop(
    installed: Path, tmp_path: Path
) -> None:
    tally = benchmarks.get("tallybench")

    class Extra:
        task = "present"
        metric_keys = ("present_acc", "present_f1")

        def evaluate(self, samples, texts, profile, ctx):  # type: ignore[no-untyped-def]
            return TaskResult("present", {"present_acc": 1.0, "present_f1": 1.0}, {}, {})

    broken = dataclasses.replace(tally, scorers=lambda: {"present": Extra()})
    assert tally.demo is not None
    files = tally.demo.synthesise(tmp_path / "set", 5, 0)
    with pytest.raises(ValueError, match="does not declare: present_f1"):
        evaluate(files["predictions_exact"], files["ground_truth"], benchmark=broken)


def test_the_command_line_serves_any_installed_benchmark(installed: Path, tmp_path: Path) -> None:
    made = _cli(
        installed,
        "synth",
        "--benchmark",
        "tallybench",
        "--samples",
        "12",
        "--out-dir",
        "t",
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    gt = tmp_path / "t" / "ground_truth.json"
    ok = _cli(
        installed,
        "validate",
        "t/predictions_exact.json",
        "--ground-truth",
        str(gt),
        "--benchmark",
        "tallybench",
        "--json",
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["verdict"] == "valid"
    out = tmp_path / "report.json"
    run = _cli(
        installed,
        "evaluate",
        "t/predictions_sloppy.json",
        "--ground-truth",
        str(gt),
        "--benchmark",
        "tallybench",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert "TallyBench metrics (tally-v1," in run.stdout and "scorer 0.1.0)" in run.stdout
    assert "Count error" in run.stdout
    report = json.loads(out.read_text())
    assert report["benchmark"] == "tallybench" and set(report["metrics"]) == {
        "count_err",
        "present_acc",
    }
    wrong = _cli(
        installed,
        "evaluate",
        "t/predictions_exact.json",
        "--ground-truth",
        str(gt),
        "--benchmark",
        "tallybench",
        "--profile",
        "leaderboard-v1",
        cwd=tmp_path,
    )
    assert wrong.returncode == 2
    assert "unknown profile 'leaderboard-v1' for benchmark 'tallybench'" in wrong.stderr
    missing = _cli(
        installed,
        "validate",
        "t/predictions_exact.json",
        "--ground-truth",
        str(gt),
        "--benchmark",
        "nope",
        cwd=tmp_path,
    )
    assert missing.returncode == 2 and "unknown benchmark 'nope'" in missing.stderr
