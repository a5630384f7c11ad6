"""Pages speak the benchmark's own words: no judge words (note, timeline step, judge section)
for a benchmark without judged metrics, MedVidBench's kept; counts in the right number; no
empty task box on About for a column that spans every task."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from medvidbench.core import display
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.submissions import submit
from medvidbench.server.web.app import create_app
from tests.server.conftest import build_runtime, make_user
from tests.web.conftest import login, token_for
from tests.web.test_api import upload

GT = [
    {"task": "patch", "images": ["a.png"], "question": "q0", "answer": [10, 10, 60, 60]},
    {"task": "referring", "images": ["b.png"], "question": "q1", "answer": [5, 5, 50, 50]},
]
JUDGE_WORDS = re.compile(r"judg", re.I)


@pytest.fixture
def medsg(tmp_path: Path) -> Iterator[tuple[TestClient, Runtime, int]]:
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(GT))
    rt = build_runtime(tmp_path, None, gt, benchmarks="medsg")
    user = make_user(rt)
    predictions = [
        {"task": "patch", "index": 0, "prediction": "[10, 10, 60, 60]"},
        {"task": "referring", "index": 0, "prediction": "[5, 5, 50, 50]"},
    ]
    sub = submit(rt, user, json.dumps(predictions).encode(), "Grounder", benchmark="medsg")
    with TestClient(create_app(rt), follow_redirects=False) as client:
        yield client, rt, sub.id
    rt.engine.dispose()


def _main(html: str) -> str:
    return html.split('<main id="main">')[1].split("</main>")[0]


@pytest.mark.parametrize("judge", [False, True])
def test_no_judge_words_for_a_benchmark_without_judged_metrics(
    medsg: tuple[TestClient, Runtime, int], judge: bool
) -> None:
    client, rt, sid = medsg
    if judge:  # a judge configured for the server's other benchmarks changes nothing here
        rt.settings.judge_api_key = SecretStr("k")
    page = _main(client.get(f"/submissions/{sid}").text)
    assert 'data-status="scored"' in page and 'data-final="yes"' in page
    timeline = page.split('id="timeline"')[1].split("</ol>")[0]
    assert re.findall(r">(\w+)</li>", timeline) == ["queued", "scoring", "scored"]
    assert not JUDGE_WORDS.search(page.split("<details")[0]), "judge words on MedSG's page"
    assert client.get(f"/api/v1/submissions/{sid}").json()["judged"] is False


def test_about_counts_in_the_right_number_and_leaves_no_empty_code_box(
    medsg: tuple[TestClient, Runtime, int],
) -> None:
    client, _, _ = medsg
    about = _main(client.get("/b/medsg/about").text)
    assert "average rank over the 1 ranked metric;" in about
    assert "<code></code>" not in about and "all tasks" in about


def test_medvidbench_keeps_its_judging_step_and_note(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime)
    sid = upload(client, token_for(client), synthetic["strong"], "Judged Later").json()["id"]
    page = client.get(f"/submissions/{sid}").text
    timeline = page.split('id="timeline"')[1].split("</ol>")[0]
    assert "judging" in timeline and 'id="judge-note"' in page
    assert "average rank over the 10 ranked metrics;" in client.get(
        "/b/medvidbench/about"
    ).text.replace("\n", " ")
    log = client.get(f"/api/v1/submissions/{sid}").json()["log"]
    scored = next(e["message"] for e in log if e["kind"] == "scored")
    assert re.search(r": \d+ metrics on \d+ tasks", scored) and "(s)" not in scored


def test_counts_read_in_the_right_number() -> None:
    assert display.count(1, "ranked metric") == "1 ranked metric"
    assert display.count(2, "warning") == "2 warnings"
    assert display.count(1_000, "entry", "entries") == "1,000 entries"


def test_a_monthly_quota_alone_is_not_called_no_quota(
    client: TestClient, web_runtime: Runtime
) -> None:
    login(client, web_runtime)
    web_runtime.settings.quota_per_day, web_runtime.settings.quota_per_month = 0, 30
    page = client.get("/b/medvidbench/submit").text
    assert "Each team may submit 30 per 30 days (" in page
    assert "No submission quota on this server." not in page
    web_runtime.settings.quota_per_month = 0
    assert "No submission quota on this server." in client.get("/b/medvidbench/submit").text
