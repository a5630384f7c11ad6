"""On a demo test set, rows scored here (synthetic items) are ranked apart from reported results
(the real test set), each in its own section that says why."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from medvidbench.server.services.entries import promote
from tests.server.conftest import make_user
from tests.web.conftest import login, token_for
from tests.web.test_api import upload


def test_demo_scores_and_reported_results_are_ranked_apart(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime)
    sid = upload(client, token_for(client), synthetic["perfect"], "Demo Perfect").json()["id"]
    admin = make_user(web_runtime, "curator", "admin")
    promote(web_runtime, admin, sid)
    rows = client.get("/api/v1/boards/official").json()
    demo = [r for r in rows if r["section"] == "demo-scored"]
    reported = [r for r in rows if r["section"] == "demo-reported"]
    assert [r["model_name"] for r in demo] == ["Demo Perfect"] and demo[0]["rank"] == 1
    assert reported and [r["place"] for r in reported] == list(range(1, len(reported) + 1))
    # fixed numbers: a row's rank is 1 + the rows with a better average rank (ties share one)
    assert [r["rank"] for r in reported] == [
        1 + sum(o["average_rank"] < r["average_rank"] for o in reported) for r in reported
    ]
    assert rows.index(demo[0]) == 0  # the scored section first
    page = client.get("/b/medvidbench/board/official").text
    assert 'id="section-demo-scored"' in page and 'id="section-demo-reported"' in page
    assert "cannot be compared" in page
    # reported numbers have no per-item results, so no rank interval, in either section
    assert all(r["rank_interval"] is None for r in reported)


def test_a_real_test_set_has_one_ranking(client: TestClient, web_runtime: Runtime) -> None:
    from sqlalchemy import update

    from medvidbench.server.store.board_cache import bump
    from medvidbench.server.store.db import transaction
    from medvidbench.server.store.models import TestSet

    with transaction(web_runtime.sessions) as session:  # as if the operator's real file
        session.execute(update(TestSet).values(is_demo=False))
        for bench_id in session.scalars(TestSet.__table__.select().with_only_columns(TestSet.id)):
            bump(session, bench_id)
    rows = client.get("/api/v1/boards/official").json()
    assert rows and all(r["section"] == "" for r in rows)
    assert 'class="section"' not in client.get("/b/medvidbench/board/official").text
