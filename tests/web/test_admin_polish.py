"""The admin area: a confirmation and a return to the right part of the page after every
action; hide (reversible) apart from delete; re-score defaults to the board's profile; re-judge
only with a judge; the audit log records submissions received and rejected and web sign-ups by
the user who signed up."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from tests.web.conftest import csrf, login, token_for
from tests.web.test_api import upload


def _act(client: TestClient, action: str, **fields: str):  # type: ignore[no-untyped-def]
    return client.post(
        f"/admin/{action}", data={"confirm": "yes", "csrf": csrf(client, "/admin"), **fields}
    )


def test_admin_actions_confirm_return_and_hide_apart_from_delete(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path], tmp_path: Path
) -> None:
    submitter = TestClient(client.app, follow_redirects=False)
    login(submitter, web_runtime)
    token = token_for(submitter)
    sid = upload(submitter, token, synthetic["strong"], "Hideable").json()["id"]
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert upload(submitter, token, bad, "Empty").status_code == 422

    login(client, web_runtime, "boss2", "admin")
    page = client.get("/admin").text
    assert "Re-judge" not in page  # no judge configured on this server
    assert "<option selected>leaderboard-v1</option>" in page  # the board's profile first
    hidden = _act(client, "hide", submission_id=str(sid), benchmark="medvidbench")
    assert hidden.status_code == 303
    assert hidden.headers["location"] == "/admin?benchmark=medvidbench#submissions"
    assert f"Submission {sid} is hidden from every board" in client.get("/admin").text
    assert all(r["submission_id"] != sid for r in client.get("/api/v1/boards/community").json())
    assert "An administrator has hidden this submission" in client.get(f"/submissions/{sid}").text
    _act(client, "unhide", submission_id=str(sid), benchmark="medvidbench")
    assert any(r["submission_id"] == sid for r in client.get("/api/v1/boards/community").json())
    role = _act(client, "role", username="webuser", role="maintainer", benchmark="medvidbench")
    assert role.headers["location"].endswith("#users")
    assert "webuser is now maintainer." in client.get("/admin").text

    audit = client.get("/admin").text.split('id="audit"')[1]
    for action in (
        "submission.received",
        "submission.rejected",
        "submission.hide",
        "submission.unhide",
        "user.role",
    ):
        assert action in audit, action


def test_web_sign_ups_are_attributed_to_the_user(client: TestClient, web_runtime: Runtime) -> None:
    made = client.post(
        "/signup",
        data={
            "username": "selfmade",
            "password": "a-long-enough-password",
            "csrf": csrf(client, "/signup"),
        },
    )
    assert made.status_code == 303
    admin = TestClient(client.app, follow_redirects=False)
    login(admin, web_runtime, "boss3", "admin")
    audit = admin.get("/admin").text.split('id="audit"')[1]
    line = next(row for row in audit.split("<tr>") if "user.signup" in row)
    assert "<td>selfmade</td>" in line  # who: the user who signed up, not "system"


def test_rejudge_is_offered_with_a_judge(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    from pydantic import SecretStr

    submitter = TestClient(client.app, follow_redirects=False)
    login(submitter, web_runtime)
    upload(submitter, token_for(submitter), synthetic["strong"], "Judgeable")
    web_runtime.settings.judge_api_key = SecretStr("k")  # configured after scoring: no call
    login(client, web_runtime, "boss4", "admin")
    assert "Re-judge" in client.get("/admin").text


def test_a_submission_whose_judging_failed_is_re_judged_from_the_admin_page(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    """Off the boards while failed; the admin's re-judge puts it back, waiting for the judge,
    and is refused with the reason when its name was taken meanwhile."""
    from pydantic import SecretStr

    from medvidbench.server.store.db import transaction
    from medvidbench.server.store.models import Submission

    submitter = TestClient(client.app, follow_redirects=False)
    login(submitter, web_runtime)
    token = token_for(submitter)
    sid = upload(submitter, token, synthetic["strong"], "Failed Judging").json()["id"]

    def judging_failed() -> None:  # as the judge step leaves it after its last attempt
        with transaction(web_runtime.sessions) as session:
            sub = session.get(Submission, sid)
            assert sub is not None and sub.scored_at is not None
            sub.status, sub.error = "failed", "RuntimeError: judge exploded"

    login(client, web_runtime, "boss5", "admin")
    promoted = _act(client, "promote", submission_id=str(sid), benchmark="medvidbench")
    assert promoted.status_code == 303, promoted.text
    judging_failed()
    web_runtime.settings.judge_api_key = SecretStr("k")
    for kind in ("community", "official"):
        board = client.get(f"/b/medvidbench/board/{kind}")
        assert board.status_code == 200 and "Failed Judging" not in board.text
    # the official entry is listed where the admin can remove it, with the reason
    shown_nowhere = client.get("/admin?benchmark=medvidbench").text.split('id="off-board"')[1]
    assert "Failed Judging" in shown_nowhere.split("</table>")[0]
    assert "judging failed" in shown_nowhere.split("</table>")[0]
    done = _act(client, "rescore", submission_id=str(sid), kind="rejudge")
    assert done.status_code == 303, done.text
    assert submitter.get(f"/api/v1/submissions/{sid}").json()["status"] == "scored"
    assert "Failed Judging" in client.get("/b/medvidbench/board/community").text

    judging_failed()
    other = TestClient(client.app, follow_redirects=False)
    login(other, web_runtime, "otheruser")
    taken = upload(other, token_for(other), synthetic["weak"], "Failed Judging")
    assert taken.status_code == 202, taken.text
    refused = _act(client, "rescore", submission_id=str(sid), kind="rejudge")
    assert refused.status_code == 409
    assert "has been taken on the leaderboard since" in refused.text
    assert submitter.get(f"/api/v1/submissions/{sid}").json()["status"] == "failed"
