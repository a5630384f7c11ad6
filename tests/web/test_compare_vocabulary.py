"""The compare page's searchable list and its messages, and one vocabulary for what a value is
not: not submitted / pending judge (not judged without a judge) / the value."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from tests.web.conftest import login, token_for
from tests.web.test_api import upload


def test_compare_shows_the_top_3_by_default_and_lists_entries_with_their_numbers(
    client: TestClient,
) -> None:
    page = client.get("/b/medvidbench/compare")
    assert page.status_code == 200
    assert 'id="compare-default"' in page.text and "top 3 of the official board" in page.text
    assert page.text.count('<th scope="col" class="num">') >= 3  # three models side by side
    official = client.get("/api/v1/boards/official").json()
    for row in official:
        assert f'value="{row["entry_id"]}"' in page.text
        assert f"official board, rank {row['rank']}, entry {row['entry_id']}" in page.text
    # shown, not ticked: ticking two of your own then compares those two, not five (#32 item 11)
    assert " checked>" not in page.text
    ids = [r["entry_id"] for r in official]
    mine = client.get(f"/b/medvidbench/compare?pick={ids[-1]}&pick={ids[-2]}")
    assert mine.status_code == 200 and 'id="compare-table"' in mine.text


def test_entries_given_in_the_address_are_ticked_and_listed_first(client: TestClient) -> None:
    ids = [r["entry_id"] for r in client.get("/api/v1/boards/official").json()]
    asked = [ids[-1], ids[-3]]
    page = client.get(f"/b/medvidbench/compare?entries={asked[0]},{asked[1]}").text
    ticked = [int(v) for v in re.findall(r'value="(\d+)" checked>', page)]
    assert sorted(ticked) == sorted(asked)
    listed = [int(v) for v in re.findall(r'name="pick" value="(\d+)"', page)]
    assert sorted(listed[:2]) == sorted(asked) and "2 ticked" in page


def test_compare_names_wrong_picks_and_refuses_1_or_5(client: TestClient) -> None:
    ids = [r["entry_id"] for r in client.get("/api/v1/boards/official").json()]
    one = client.get(f"/b/medvidbench/compare?pick={ids[0]}")
    assert one.status_code == 400 and "Choose 2 to 4 entries to compare; 1 chosen." in one.text
    five = client.get("/b/medvidbench/compare?entries=" + ",".join(map(str, ids[:5])))
    assert five.status_code == 400 and "5 chosen" in five.text
    assert 'id="compare-table"' not in five.text  # nothing silently trimmed
    unknown = client.get(f"/b/medvidbench/compare?entries={ids[0]},99999,abc")
    assert (
        unknown.status_code == 400
        and "No entry abc, 99999 on the MedVidBench boards." in unknown.text
    )
    two = client.get(f"/b/medvidbench/compare?pick={ids[0]}&pick={ids[1]}")
    assert two.status_code == 200 and 'id="compare-table"' in two.text


def test_compare_search_works_without_javascript(client: TestClient) -> None:
    rows = client.get("/api/v1/boards/official").json()
    name = rows[-1]["model_name"]
    found = client.get(f"/b/medvidbench/compare?q={name[:6]}&find=1").text
    listed = [r for r in rows if f'value="{r["entry_id"]}"' in found]
    assert name in [r["model_name"] for r in listed]
    nothing = client.get("/b/medvidbench/compare?q=zzzz-no-such-model&find=1").text
    assert "No model or team matches" in nothing


def test_one_vocabulary_for_missing_values(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    from pydantic import SecretStr

    login(client, web_runtime)
    token = token_for(client)
    records = json.loads(synthetic["strong"].read_text())
    partial = [r for r in records if not r["qa_type"].startswith(("video_summary", "tal"))]
    path = synthetic["strong"].parent / "partial-no-vs.json"
    path.write_text(json.dumps(partial))
    sid = upload(client, token, path, "Partial").json()["id"]  # scored at once, not judged
    web_runtime.settings.judge_api_key = SecretStr("k")  # now a judge is configured
    page = client.get(f"/submissions/{sid}").text
    assert page.count(">not submitted<") == 5  # TAG@0.3, TAG@0.5, VS_llm; tasks TAL and VS
    assert page.count(">pending judge<") == 3  # DVC_llm, RC_llm; task RC
    board = client.get("/b/medvidbench/board/community").text
    cells = re.findall(r'<td class="num pending"[^>]*>([^<]*)</td>', board)
    assert cells.count("not submitted") == 3 and cells.count("pending judge") == 2
    assert ">pending<" not in board
    entry = client.get("/api/v1/boards/community").json()[0]["entry_id"]
    other = client.get("/api/v1/boards/official").json()[0]["entry_id"]
    compared = client.get(f"/b/medvidbench/compare?entries={entry},{other}").text
    assert compared.count(">not submitted<") == 3 and compared.count(">pending judge<") == 2
