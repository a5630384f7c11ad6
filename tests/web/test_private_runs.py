"""Private evaluation: choose public or private at upload; a private run is scored, seen by its
submitter (with where it would rank) and counted in the quota, but on no board; publish,
unpublish and withdraw later (withdrawn: off every board for good, kept for the audit)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from tests.web.conftest import csrf, login, token_for
from tests.web.test_api import upload


def _on_board(client: TestClient, sid: int) -> bool:
    return any(r["submission_id"] == sid for r in client.get("/api/v1/boards/community").json())


def test_a_private_run_from_upload_to_withdrawal(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    web_runtime.settings.quota_per_day = 5
    login(client, web_runtime)
    token = token_for(client)
    auth = {"Authorization": f"Bearer {token}"}
    upload(client, token, synthetic["weak"], "Public Weak")
    created = upload(client, token, synthetic["strong"], "Private Strong", visibility="private")
    assert created.status_code == 202
    sid = created.json()["id"]
    assert not _on_board(client, sid)
    stranger = TestClient(client.app)
    assert stranger.get(f"/api/v1/submissions/{sid}").status_code == 404
    assert stranger.get(f"/submissions/{sid}").status_code == 404
    mine = client.get(f"/api/v1/submissions/{sid}").json()
    assert mine["visibility"] == "private" and mine["would_rank"] == [1, 2]
    page = client.get(f"/submissions/{sid}").text
    assert "would rank <strong>1 of 2</strong>" in page
    quota = client.get("/api/v1/quota", headers=auth).json()["windows"][0]
    assert quota["used"] == 2  # private runs count

    published = client.post(
        f"/submissions/{sid}/visibility",
        data={"visibility": "public", "csrf": csrf(client, f"/submissions/{sid}")},
    )
    assert published.status_code == 303
    assert "Your submission is public" in client.get(f"/submissions/{sid}").text
    assert _on_board(client, sid)
    assert stranger.get(f"/api/v1/submissions/{sid}").status_code == 200

    back = client.post(
        f"/api/v1/submissions/{sid}/visibility", headers=auth, data={"visibility": "private"}
    )
    assert back.status_code == 200 and not _on_board(client, sid)

    refused = client.post(
        f"/submissions/{sid}/visibility",
        data={"visibility": "withdrawn", "csrf": csrf(client, f"/submissions/{sid}")},
    )
    assert refused.status_code == 400  # withdrawing needs the confirmation
    withdrawn = client.post(
        f"/submissions/{sid}/visibility",
        data={
            "visibility": "withdrawn",
            "confirm": "yes",
            "csrf": csrf(client, f"/submissions/{sid}"),
        },
    )
    assert withdrawn.status_code == 303
    again = client.post(
        f"/api/v1/submissions/{sid}/visibility", headers=auth, data={"visibility": "public"}
    )
    assert again.status_code == 409 and "final" in again.json()["message"]
    assert not _on_board(client, sid)
    log = [e["kind"] for e in client.get(f"/api/v1/submissions/{sid}").json()["log"]]
    assert log[-3:] == ["published", "unpublished", "withdrawn"]

    admin = TestClient(client.app, follow_redirects=False)
    login(admin, web_runtime, "auditor", "admin")
    audit = admin.get("/admin").text.split('id="audit"')[1]
    for action in ("submission.publish", "submission.unpublish", "submission.withdraw"):
        assert action in audit


def test_only_the_submitter_changes_visibility_and_values_are_checked(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    bad = upload(client, token, synthetic["strong"], "Odd", visibility="secret")
    assert bad.status_code == 400 and "public or private" in bad.json()["message"]
    sid = upload(client, token, synthetic["strong"], "Mine").json()["id"]
    other = TestClient(client.app, follow_redirects=False)
    login(other, web_runtime, "someoneelse")
    theirs = token_for(other)
    answer = other.post(
        f"/api/v1/submissions/{sid}/visibility",
        headers={"Authorization": f"Bearer {theirs}"},
        data={"visibility": "withdrawn"},
    )
    assert answer.status_code == 404 and _on_board(client, sid)


def test_a_private_run_scored_on_an_earlier_test_set_would_rank_nowhere(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path], tmp_path: Path
) -> None:
    """Its items are not the board's any more: a place among runs scored on other items would
    be a number that was not computed, so none is given."""
    from medvidbench.benchmarks.medvidbench.synth import write_synthetic
    from medvidbench.server.services.catalogue import load_benchmark

    login(client, web_runtime)
    token = token_for(client)
    upload(client, token, synthetic["weak"], "Public Weak")
    sid = upload(client, token, synthetic["strong"], "Private Strong", visibility="private")
    sid = sid.json()["id"]
    assert client.get(f"/api/v1/submissions/{sid}").json()["would_rank"] == [1, 2]
    newer = write_synthetic(tmp_path / "newer", samples=200, seed=11)
    load_benchmark(web_runtime, newer["ground_truth"])  # the benchmark's test set is replaced
    upload(client, token, newer["weak"], "Public Weak Again")
    assert client.get(f"/api/v1/submissions/{sid}").json()["would_rank"] is None
    assert "would rank" not in client.get(f"/submissions/{sid}").text
