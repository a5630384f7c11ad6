"""A submission page holds the whole record: every validation warning's text (page, API,
upload answer), every evaluation stored (an admin's re-score under another profile included),
a way to show any of them, and the record as a JSON download."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient
from markupsafe import escape

from medvidbench.server.runtime import Runtime
from tests.web.conftest import csrf, login, token_for
from tests.web.test_api import upload

ORDER_WARNING = "matched to their test question by order alone"


def test_every_warning_text_reaches_the_upload_answer_the_api_and_the_page(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    # the shuffled archetype: out of the test file's order, so the answers to a clip's
    # several questions of one qa_type are matched by order alone (one warning per task)
    login(client, web_runtime)
    created = upload(client, token_for(client), synthetic["shuffled"], "Warned").json()
    warned = created["warnings"]
    assert len(warned) >= 2 and all(ORDER_WARNING in w for w in warned)
    assert any(w.startswith("task 'cvs_assessment': ") for w in warned)
    assert all("Add an 'index' field to each record" in w for w in warned)
    assert created["visibility"] == "public"
    detail = client.get(f"/api/v1/submissions/{created['id']}").json()
    assert detail["warnings"] == warned
    validated = next(e for e in detail["log"] if e["kind"] == "validated")
    assert f"{len(warned)} warnings" in validated["message"]
    logged = [e["message"] for e in detail["log"] if e["kind"] == "warning"]
    assert logged == warned  # stored with the submission, every text in full
    page = client.get(f"/submissions/{created['id']}").text
    assert 'id="warnings"' in page and f"Validation warnings ({len(warned)})" in page
    assert all(str(escape(w)) in page for w in warned)
    # a visitor sees the count, not the texts (they quote the submitter's file)
    visitor = TestClient(client.app).get(f"/api/v1/submissions/{created['id']}").json()
    assert visitor["warnings"] is None
    assert ORDER_WARNING not in json.dumps(visitor)


def test_an_admin_rescore_is_listed_shown_on_request_and_downloadable(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    submitter = TestClient(client.app, follow_redirects=False)
    login(submitter, web_runtime)
    sid = upload(submitter, token_for(submitter), synthetic["shuffled"], "Rescored").json()["id"]
    login(client, web_runtime, "boss", "admin")
    done = client.post(
        "/admin/rescore",
        data={
            "confirm": "yes",
            "csrf": csrf(client, "/admin"),
            "submission_id": str(sid),
            "kind": "rescore",
            "profile": "strict-v2",
        },
    )
    assert done.status_code == 303
    detail = submitter.get(f"/api/v1/submissions/{sid}").json()
    profiles = [(e["profile"], e["on_boards"], e["shown"]) for e in detail["evaluations"]]
    assert profiles == [("leaderboard-v1", True, True), ("strict-v2", False, False)]
    assert detail["profile"] == "leaderboard-v1"  # the boards' evaluation by default
    assert any(e["kind"] == "rescored" and "strict-v2" in e["message"] for e in detail["log"])
    strict = detail["evaluations"][1]["id"]
    page = submitter.get(f"/submissions/{sid}").text
    assert 'id="evaluations"' in page and f"?evaluation={strict}" in page
    shown = submitter.get(f"/submissions/{sid}?evaluation={strict}").text
    assert (
        "Profile <code>strict-v2</code>" in shown and "not the evaluation the boards use" in shown
    )
    api = submitter.get(f"/api/v1/submissions/{sid}?evaluation={strict}").json()
    assert api["profile"] == "strict-v2" and api["metrics"] != detail["metrics"]

    report = submitter.get(f"/submissions/{sid}/report.json?evaluation={strict}")
    assert report.status_code == 200
    assert report.headers["content-disposition"] == (
        f'attachment; filename="submission-{sid}-strict-v2.json"'
    )
    body = report.json()
    assert body["profile"] == "strict-v2" and len(body["evaluations"]) == 2
    assert ORDER_WARNING in body["warnings"][0]


def test_an_evaluation_of_another_submission_or_out_of_range_is_a_clear_404_or_422(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    first = upload(client, token, synthetic["strong"], "First").json()["id"]
    second = upload(client, token, synthetic["weak"], "Second").json()["id"]
    theirs = client.get(f"/api/v1/submissions/{first}").json()["evaluations"][0]["id"]
    wrong = client.get(f"/api/v1/submissions/{second}?evaluation={theirs}")
    assert wrong.status_code == 404
    assert f"submission {second} has no evaluation {theirs}" in wrong.json()["message"]
    assert client.get(f"/submissions/{second}?evaluation={theirs}").status_code == 404
    huge = client.get(f"/submissions/{second}/report.json?evaluation={'9' * 30}")
    assert huge.status_code == 422
