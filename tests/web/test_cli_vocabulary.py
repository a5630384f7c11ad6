"""The command line speaks the web pages' words: ``medvidbench submit`` prints display names,
units (MedSG-Bench's percentages), the absent-value words ("not judged", never "pending" without
a judge), intervals, every validation warning, and for ``--private`` that the run is private and
where it would rank; ``serve``'s banner never breaks a command the reader must copy."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.live import CLI, create_user, live_server

PASSWORD = "vocabulary-password-1"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "80", **(env or {})},
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    # a data folder whose path is long, as a real one often is: the banner's commands name it
    data = tmp_path_factory.mktemp("a-rather-long-folder-name-for-the-leaderboard-data") / "d"
    data.mkdir()
    create_user(data, "lab", PASSWORD)
    made = _run("tokens", "create", "lab", "--data-dir", str(data))
    assert made.returncode == 0, made.stderr
    env = {"MEDVIDBENCH_BENCHMARKS": "", "MEDVIDBENCH_QUOTA_PER_DAY": "0"}
    with live_server(data, env=env) as live:
        yield {"url": live.url, "data": data, "token": made.stdout.strip(), "live": live}


def _submit(served: dict[str, Any], file: Path, name: str, *extra: str) -> Any:
    return _run(
        "submit",
        str(file),
        "--server",
        served["url"],
        "--token",
        served["token"],
        "--model-name",
        name,
        "--wait",
        *extra,
    )


def test_submit_prints_the_pages_words_units_intervals_and_warnings(
    served: dict[str, Any],
) -> None:
    demo = served["data"] / "demo" / "medvidbench"
    sent = _submit(served, demo / "predictions_shuffled.json", "Worded Shuffled")
    assert sent.returncode == 0, sent.stderr
    out = sent.stdout
    assert "TAG_mIoU@0.3" in out and "tag_miou_03" not in out  # display names, not keys
    assert "not judged" in out and "pending" not in out  # no judge on this server
    assert "95 % interval" in out and " – " in out  # the intervals, as the page shows them
    # every order-only warning in full, one per task (the shuffled file is in no known order)
    said = sent.stderr.replace("\n", " ")
    assert " validation warnings:" in said and "task 'cvs_assessment': " in said
    assert "matched to their test question by order alone" in said
    assert "Add an 'index' field to each record" in said
    assert "private" not in out


def test_submit_private_says_private_and_where_it_would_rank(served: dict[str, Any]) -> None:
    demo = served["data"] / "demo" / "medvidbench"
    sent = _submit(served, demo / "predictions_weak.json", "Worded Private", "--private")
    assert sent.returncode == 0, sent.stderr
    assert "(private: seen by you and the maintainers only, on no board)" in sent.stderr
    assert "on the community board it would rank 2 of 2" in sent.stdout


def test_medsg_scores_are_percentages_as_on_its_pages(served: dict[str, Any]) -> None:
    demo = served["data"] / "demo" / "medsg"
    sent = _submit(served, demo / "results_strong.json", "Worded Grounder", "--benchmark", "medsg")
    assert sent.returncode == 0, sent.stderr
    overall = next(line for line in sent.stdout.splitlines() if "Overall Acc@0.5" in line)
    assert "%" in overall and "overall.acc_05" not in sent.stdout


def test_the_serve_banner_keeps_each_command_on_one_line(served: dict[str, Any]) -> None:
    served["live"].process.terminate()  # the banner is read once the server has stopped
    served["live"].process.wait(timeout=20)
    banner = served["live"].process.stderr.read().decode()
    where = served["data"]
    wanted = (
        f"no admin account yet: create one with 'medvidbench users create NAME --admin "
        f"--data-dir {where}'"
    )
    assert len(wanted) > 80  # what a wrap at 80 columns used to split
    assert wanted in banner.splitlines(), banner
