"""The admin's submission table and actions: withdrawn, private and hidden submissions are not
promoted (a clear 409, nothing written); official entries whose submission no board shows are
listed and removable; one confirmation per action (no checkboxes; without script a page asks
once); visibility, hidden and team columns; the audit log a page at a time."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from medvidbench.server.runtime import Runtime
from medvidbench.server.services import audit
from medvidbench.server.store.models import AuditLog, Entry
from tests.web.conftest import csrf, login, token_for
from tests.web.test_api import upload


def _act(client: TestClient, action: str, confirm: str = "yes", **fields: str):  # type: ignore[no-untyped-def]
    data = {"csrf": csrf(client, "/admin"), "benchmark": "medvidbench", **fields}
    if confirm:
        data["confirm"] = confirm
    return client.post(f"/admin/{action}", data=data)


def _count(runtime: Runtime, table: type) -> int:
    with runtime.sessions() as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


def _setup(client: TestClient, runtime: Runtime, synthetic: dict[str, Path]) -> dict[str, int]:
    submitter = TestClient(client.app, follow_redirects=False)
    login(submitter, runtime)
    token = token_for(submitter)
    ids = {
        name: upload(submitter, token, synthetic[file], name, visibility=vis).json()["id"]
        for name, file, vis in (
            ("Gone", "strong", "public"),
            ("Secret", "weak", "private"),
            ("Shy", "perfect", "public"),
            ("Fine", "format-noisy", "public"),
        )
    }
    form = csrf(submitter, f"/submissions/{ids['Gone']}")
    submitter.post(
        f"/submissions/{ids['Gone']}/visibility",
        data={"csrf": form, "visibility": "withdrawn", "confirm": "yes"},
    )
    login(client, runtime, "boss", "admin")
    assert _act(client, "hide", submission_id=str(ids["Shy"])).status_code == 303
    return ids


def test_withdrawn_private_and_hidden_submissions_are_not_promoted(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    ids = _setup(client, web_runtime, synthetic)
    entries, lines = _count(web_runtime, Entry), _count(web_runtime, AuditLog)
    for name, why in (
        ("Gone", "was withdrawn by its submitter"),
        ("Secret", "is private"),
        ("Shy", "is hidden from every board: unhide it first"),
    ):
        refused = _act(client, "promote", submission_id=str(ids[name]))
        assert refused.status_code == 409, refused.text
        assert f"submission {ids[name]} {why}" in refused.text
    assert _count(web_runtime, Entry) == entries and _count(web_runtime, AuditLog) == lines
    promoted = _act(client, "promote", submission_id=str(ids["Fine"]))
    assert promoted.status_code == 303
    page = client.get("/admin").text
    for name, state in (("Gone", "withdrawn"), ("Secret", "private"), ("Shy", "hidden")):
        row = re.search(rf'<tr data-submission="{ids[name]}">(.*?)</tr>', page, re.S)
        assert row and f"not promotable ({state})" in row.group(1)
        assert 'action="/admin/promote"' not in row.group(1)
    table = page.split('id="admin-submissions"')[1].split("</thead>")[0]
    assert all(f">{h}</th>" in table for h in ("Team", "Visibility", "Hidden"))
    fine = re.search(rf'<tr data-submission="{ids["Fine"]}">(.*?)</tr>', page, re.S)
    assert fine and "<td>Web Team</td>" in fine.group(1)


def test_an_official_entry_no_board_shows_is_listed_and_removable(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    submitter = TestClient(client.app, follow_redirects=False)
    login(submitter, web_runtime)
    sid = upload(submitter, token_for(submitter), synthetic["strong"], "Later Gone").json()["id"]
    login(client, web_runtime, "boss", "admin")
    assert _act(client, "promote", submission_id=str(sid)).status_code == 303
    form = csrf(submitter, f"/submissions/{sid}")
    submitter.post(
        f"/submissions/{sid}/visibility",
        data={"csrf": form, "visibility": "withdrawn", "confirm": "yes"},
    )
    page = client.get("/admin").text
    assert 'id="off-board"' in page
    stranded = page.split('id="off-board"')[1].split("</table>")[0]
    entry = re.search(r'name="entry_id" value="(\d+)"', stranded)
    assert entry and "withdrawn" in stranded
    before = _count(web_runtime, Entry)
    assert _act(client, "remove", entry_id=entry.group(1)).status_code == 303
    assert _count(web_runtime, Entry) == before - 1
    assert 'id="off-board"' not in client.get("/admin").text


def test_one_confirmation_per_action(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    submitter = TestClient(client.app, follow_redirects=False)
    login(submitter, web_runtime)
    sid = upload(submitter, token_for(submitter), synthetic["strong"], "Asked").json()["id"]
    login(client, web_runtime, "boss", "admin")
    page = client.get("/admin").text
    assert "I confirm" not in page and 'type="checkbox"' not in page
    assert f'data-confirm="Delete submission {sid} for good?' in page
    assert 'class="danger">Delete</button>' in page and 'class="secondary">Hide</button>' in page
    # the profile menu belongs to Re-score: it follows that button, inside its form
    rescore = re.search(r'<form[^>]*action="/admin/rescore".*?</form>', page, re.S)
    assert rescore and re.search(r">Re-score</button> <label[^>]*>under <select", rescore[0])
    # without script, the server asks once on a page of its own; nothing is done before
    asked = _act(client, "delete", confirm="", submission_id=str(sid))
    assert asked.status_code == 200
    assert f"Delete submission {sid} for good?" in asked.text
    assert 'name="confirm" value="yes"' in asked.text
    assert client.get(f"/api/v1/submissions/{sid}").status_code == 200
    assert _act(client, "delete", submission_id=str(sid)).status_code == 303
    assert client.get(f"/api/v1/submissions/{sid}").status_code == 404


def test_the_audit_log_is_paginated(client: TestClient, web_runtime: Runtime) -> None:
    login(client, web_runtime, "boss", "admin")
    for n in range(60):
        audit.record(web_runtime, None, "test.line", f"line:{n}")
    total = _count(web_runtime, AuditLog)
    pages = -(-total // 25)
    first = client.get("/admin").text
    assert first.split('id="audit"')[1].split("</table>")[0].count("<tr>") == 25 + 1
    assert f"Page 1 of {pages}" in first and "audit_page=2" in first and 'rel="prev"' not in first
    last = client.get(f"/admin?audit_page={pages}").text
    rows = last.split('id="audit"')[1].split("</table>")[0].count("<tr>") - 1
    assert rows == total - 25 * (pages - 1) and 'rel="next"' not in last
    assert client.get("/admin?audit_page=0").status_code == 422
