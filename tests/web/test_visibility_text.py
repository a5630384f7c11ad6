"""The owner's visibility sentence says what is true now: public and on the board once scored,
public and waiting ("once scored"), hidden by an administrator (no "Public" above it), or public
but on no board after a rejection."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import update

from medvidbench.server.runtime import Runtime
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import Submission
from tests.web.conftest import csrf, login, token_for
from tests.web.test_api import upload


def _state(client: TestClient, sid: int) -> str:
    page = client.get(f"/submissions/{sid}").text
    return page.split('id="visibility-state"')[1].split("</div>")[0] + (
        page.split('id="hidden-note"')[1][:120] if 'id="hidden-note"' in page else ""
    )


def test_the_visibility_sentence_follows_the_state(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime)
    sid = upload(client, token_for(client), synthetic["strong"], "Stated").json()["id"]
    scored = _state(client, sid)
    assert "<strong>Public</strong>: on the community board.</p>" in scored
    assert "once scored" not in scored
    with transaction(web_runtime.sessions) as session:
        session.execute(update(Submission).where(Submission.id == sid).values(status="queued"))
    assert "on the community board once scored." in _state(client, sid)
    with transaction(web_runtime.sessions) as session:
        session.execute(update(Submission).where(Submission.id == sid).values(status="scored"))

    admin = TestClient(client.app, follow_redirects=False)
    login(admin, web_runtime, "boss", "admin")
    hidden = admin.post(
        "/admin/hide",
        data={"csrf": csrf(admin, "/admin"), "confirm": "yes", "submission_id": str(sid)},
    )
    assert hidden.status_code == 303
    state = _state(client, sid)
    assert "Public" not in state and "An administrator has hidden this submission" in state
    page = client.get(f"/submissions/{sid}").text
    assert page.index('id="visibility-state"') < page.index('id="hidden-note"')


def test_a_rejected_public_submission_is_on_no_board(
    client: TestClient, web_runtime: Runtime, tmp_path: Path
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": "nope&&1&&2&&1.0", "qa_type": "tal", "prediction": "x"}]')
    assert upload(client, token, bad, "Refused").status_code == 422
    mine = client.get("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"})
    sid = next(s["id"] for s in mine.json() if s["model_name"] == "Refused")
    state = _state(client, sid)
    assert "on no board: this submission was rejected." in state and "once scored" not in state
