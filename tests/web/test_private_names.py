"""Neither the duplicate-file check nor the model-name check reveals another user's private run.

Before: uploading the file of someone's private run answered 409 "already submitted as
submission 2 ('Zephyr-Secret-7B')", and a new file under a private run's model name 409 "already
on the leaderboard" (a fresh name: 202), each costing no quota: two oracles.

Now an identical file is refused only within the submitter's own account and team (another
team may submit the same outputs, e.g. of a public baseline), and a model name is held against
other users only by what is public: a public submission or an entry on a board. A private run
that is published under a name someone has since made public is refused, to its owner.
"""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from medvidbench.server.services.accounts import create_token
from tests.server.conftest import make_user
from tests.web.test_api import upload

SECRET = "Zephyr-Secret-7B"


def _token(runtime: Runtime, name: str, team: str | None) -> str:
    make_user(runtime, name, team=team)
    return create_token(runtime, name)


def _publish(client: TestClient, token: str, sid: int):  # type: ignore[no-untyped-def]
    return client.post(
        f"/api/v1/submissions/{sid}/visibility",
        headers={"Authorization": f"Bearer {token}"},
        data={"visibility": "public"},
    )


def _quota_used(client: TestClient, token: str) -> int:
    windows = client.get("/api/v1/quota", headers={"Authorization": f"Bearer {token}"}).json()
    return int(windows["windows"][0]["used"])


def test_another_teams_upload_learns_nothing_of_a_private_run(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    web_runtime.settings.quota_per_day = 10
    owner = _token(web_runtime, "secretive", "Hidden Lab")
    prober = _token(web_runtime, "prober", "Probe Team")
    private = upload(client, owner, synthetic["strong"], SECRET, visibility="private")
    assert private.status_code == 202, private.text
    secret_id = private.json()["id"]

    # The same file from another team: accepted (it is theirs to submit), nothing named.
    same_file = upload(client, prober, synthetic["strong"], "Probe Copy")
    assert same_file.status_code == 202, same_file.text
    assert SECRET not in same_file.text
    # The private run's name, from another user: accepted like any fresh name.
    same_name = upload(client, prober, synthetic["weak"], SECRET, visibility="private")
    assert same_name.status_code == 202, same_name.text
    assert _quota_used(client, prober) == 2  # both counted, as any accepted upload

    # Both private runs named alike are scored; neither is on a board.
    board = client.get("/api/v1/boards/community").json()
    assert all(r["model_name"] != SECRET for r in board)
    for sid, token in ((secret_id, owner), (same_name.json()["id"], prober)):
        mine = client.get(
            f"/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"}
        ).json()
        assert mine["status"] in ("scored", "complete"), mine["status"]


def test_a_private_run_whose_name_went_public_cannot_be_published(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    owner = _token(web_runtime, "slowpoke", "Lab One")
    rival = _token(web_runtime, "quick", "Lab Two")
    sid = upload(client, owner, synthetic["strong"], SECRET, visibility="private").json()["id"]
    rival_sid = upload(client, rival, synthetic["weak"], SECRET).json()["id"]  # public
    refused = _publish(client, owner, sid)
    assert refused.status_code == 409, refused.text
    message = refused.json()["message"]
    assert f"the model name {SECRET!r} is now taken on the boards" in message
    assert "withdraw" in message  # what the owner can do
    board = client.get("/api/v1/boards/community").json()
    assert [r["submission_id"] for r in board if r["model_name"] == SECRET] == [rival_sid]

    # A name on a board (here a reported result of the official board) is public too.
    reported = client.get("/api/v1/boards/official").json()[0]["model_name"]
    other = upload(client, owner, synthetic["weak"], reported, visibility="private")
    assert other.status_code == 409 and "already on the leaderboard" in other.json()["message"]


def test_identical_files_are_refused_within_an_account_and_a_team(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    mine = _token(web_runtime, "first-member", "Shared Lab")
    mate = _token(web_runtime, "second-member", "Shared Lab")
    first = upload(client, mine, synthetic["strong"], "Run A", visibility="private")
    assert first.status_code == 202
    again = upload(client, mine, synthetic["strong"], "Run B")
    assert again.status_code == 409
    assert (
        f"you already submitted this exact file as submission {first.json()['id']}"
        in (again.json()["message"])
    )
    # A teammate's private run is not theirs to see: refused, but not named.
    by_mate = upload(client, mate, synthetic["strong"], "Run C")
    assert by_mate.status_code == 409
    assert by_mate.json()["message"] == (
        "your team already submitted this exact file; submit it once per team"
    )
    # A withdrawn run holds neither: its owner may submit the same file under a new name.
    withdrawn = client.post(
        f"/api/v1/submissions/{first.json()['id']}/visibility",
        headers={"Authorization": f"Bearer {mine}"},
        data={"visibility": "withdrawn"},
    )
    assert withdrawn.status_code == 200
    assert upload(client, mine, synthetic["strong"], "Run A again").status_code == 202


def test_a_reported_result_may_take_a_private_runs_name(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    from medvidbench.server.services.entries import add_reported

    owner = _token(web_runtime, "quiet", "Quiet Lab")
    sid = upload(client, owner, synthetic["strong"], SECRET, visibility="private").json()["id"]
    admin = make_user(web_runtime, "curator", "admin", team=None)
    add_reported(web_runtime, admin, SECRET, "A paper", {}, source="paper", kind="community")
    assert _publish(client, owner, sid).status_code == 409
