"""The board's rank rule everywhere it is used: a private run's "would rank" is the rank it gets
once published (ties shared), and the smallest detectable difference is on the About and the
compare pages."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from tests.web.conftest import csrf, login, token_for
from tests.web.test_api import upload


def test_would_rank_is_the_rank_once_published_ties_included(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    web_runtime.settings.quota_per_day = 10
    login(client, web_runtime)
    token = token_for(client)
    for name in ("strong", "weak"):
        assert upload(client, token, synthetic[name], f"Public {name}").status_code == 202
    # the same answers as the public strong one, in another order: a tie in every resample
    sid = upload(client, token, synthetic["shuffled"], "Private twin", visibility="private")
    sid = sid.json()["id"]
    said = client.get(f"/api/v1/submissions/{sid}").json()["would_rank"]
    assert said == [1, 3]  # shares the strong one's rank, not 2 of 3 by name
    published = client.post(
        f"/submissions/{sid}/visibility",
        data={"visibility": "public", "csrf": csrf(client, f"/submissions/{sid}")},
    )
    assert published.status_code == 303
    board = {r["model_name"]: r for r in client.get("/api/v1/boards/community").json()}
    assert board["Private twin"]["rank"] == board["Public strong"]["rank"] == said[0]
    assert board["Public weak"]["rank"] == 3 and len(board) == said[1]


def test_smallest_detectable_difference_on_about_and_compare(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    ids = []
    for name in ("strong", "weak", "format-noisy"):
        created = upload(client, token, synthetic[name], f"Model {name}")
        assert created.status_code == 202
        ids.append(created.json()["id"])
    about = client.get("/b/medvidbench/about").text
    assert 'id="detectable-table"' in about and "80 % of test sets" in about
    table = about.split('id="detectable-table"')[1].split("</table>")[0]
    values = [float(v) for v in re.findall(r'<td class="num">([0-9.]+)', table)]
    assert values and all(0 < v < 1 for v in values)  # positive, on the metrics' 0-1 scales
    entries = [r["entry_id"] for r in client.get("/api/v1/boards/community").json()]
    compare = client.get(f"/b/medvidbench/compare?entries={entries[0]},{entries[1]}").text
    assert "Smallest detectable" in compare
    shown = re.findall(r'<td class="num detectable">([0-9.]+)</td>', compare)
    # 0 only where the two answered a task alike in every resample; most metrics need more
    assert shown and all(float(v) >= 0 for v in shown)
    assert sum(float(v) > 0 for v in shown) > len(shown) / 2
