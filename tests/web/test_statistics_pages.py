"""Intervals on the server: stored when a submission is scored, shown on its page, in the API
and the exports; rank intervals and tie groups on the boards; paired differences on the
compare page; reported rows say why they have none."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from tests.web.conftest import login, token_for
from tests.web.test_api import upload


def _three(client: TestClient, runtime: Runtime, synthetic: dict[str, Path]) -> dict[str, int]:
    login(client, runtime)
    token = token_for(client)
    ids = {}
    for name in ("strong", "shuffled", "weak"):
        created = upload(client, token, synthetic[name], f"Model-{name}")
        assert created.status_code == 202, created.text
        ids[name] = created.json()["id"]
    return ids


def test_intervals_from_scoring_to_page_api_board_compare_and_export(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    ids = _three(client, web_runtime, synthetic)
    detail = client.get(f"/api/v1/submissions/{ids['strong']}").json()
    stats = detail["statistics"]
    assert stats["replicates"] == 1000 and stats["confidence"] == 0.95
    # hidden labels: the seed is the server's secret, never shown (tests/web/test_bootstrap_seed.py)
    assert stats["seed"] is None and stats["seed_secret"] is True
    assert "values" not in stats and "keys" not in stats  # the replicates stay on the server
    assert stats["cluster_rule"].startswith("every question about one source video")
    for key, value in detail["metrics"].items():
        if value is not None:
            lo, hi = stats["intervals"][key]
            assert lo <= value <= hi

    page = client.get(f"/submissions/{ids['strong']}").text
    assert "95 % interval" in page and 'id="interval-note"' in page
    assert "1000 replicates, a seed this server keeps secret" in page

    rows = {r["model_name"]: r for r in client.get("/api/v1/boards/community").json()}
    strong, shuffled, weak = (rows[f"Model-{n}"] for n in ("strong", "shuffled", "weak"))
    # identical answers: in no resample is either better, so both rank first (one medal each)
    # and either could hold places 1 and 2; the weak one is behind both in every resample
    assert strong["rank"] == shuffled["rank"] == 1 and {strong["place"], shuffled["place"]} == {
        1,
        2,
    }
    assert strong["rank_interval"] == shuffled["rank_interval"] == [1, 2]
    assert strong["tie_group"] == shuffled["tie_group"] != weak["tie_group"]
    assert weak["rank"] == 3 and weak["rank_interval"] == [3, 3]
    official = client.get("/api/v1/boards/official").json()
    assert official and all(r["rank_interval"] is None for r in official)
    assert all(
        "reported numbers come without per-item results" in r["interval_note"] for r in official
    )

    board = client.get("/b/medvidbench/board/community").text
    assert 'class="rank-ci"' in board and "(1–2)" in board and 'id="intervals-toggle"' in board
    assert board.count('class="medal m1"') == 2  # the two identical entries share gold
    plain = client.get("/b/medvidbench/board/community?intervals=off").text
    assert 'class="rank-ci"' not in plain and "Show rank intervals" in plain
    assert "(n/a)" in client.get("/b/medvidbench/board/official").text

    entries = ",".join(str(r["entry_id"]) for r in (strong, shuffled, weak))
    compared = client.get(f"/b/medvidbench/compare?entries={entries}").text
    assert 'id="differences"' in compared
    same, worse = compared.split("<caption>")[1:3]
    # the same answers: "identical" on every rule-based metric (judged ones pending), never an
    # interval of 0.000 to 0.000 (#32 item 12)
    assert same.count(">identical<") == 7 and "not distinguishable" not in same
    assert worse.count("Model-strong better") == 7 and "not distinguishable" not in worse

    api = client.get(f"/api/v1/compare?entries={entries}").json()["differences"]
    assert [(c["reference"], c["other"]) for c in api] == [
        ("Model-strong", "Model-shuffled"),
        ("Model-strong", "Model-weak"),
    ]
    assert api[0]["metrics"]["stg_miou"] == {
        "difference": 0.0,
        "interval": None,
        "distinguishable": None,
        "identical": True,
    }
    weaker = api[1]["metrics"]["stg_miou"]
    assert weaker["distinguishable"] and weaker["interval"][1] < 0 < -weaker["difference"]

    exported = client.get("/api/v1/benchmarks/medvidbench/boards/community?format=csv").text
    table = list(csv.DictReader(io.StringIO(exported)))
    top = next(r for r in table if r["model"] == "Model-strong")
    assert (top["rank_interval_low"], top["rank_interval_high"]) == ("1", "2")
    assert float(top["STG_mIoU low"]) <= float(top["STG_mIoU"]) <= float(top["STG_mIoU high"])


def test_no_bootstrap_when_turned_off(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    from medvidbench.server.web.app import create_app
    from tests.server.conftest import build_runtime

    rt = build_runtime(tmp_path, None, synthetic["ground_truth"], bootstrap_replicates=0)
    try:
        with TestClient(create_app(rt), follow_redirects=False) as c:
            login(c, rt)
            created = upload(c, token_for(c), synthetic["strong"], "NoStats")
            detail = c.get(f"/api/v1/submissions/{created.json()['id']}").json()
            assert detail["statistics"] is None
            assert "No intervals" in c.get(f"/submissions/{detail['id']}").text
            (row,) = c.get("/api/v1/boards/community").json()
            assert row["rank_interval"] is None and "without a bootstrap" in row["interval_note"]
    finally:
        rt.engine.dispose()
