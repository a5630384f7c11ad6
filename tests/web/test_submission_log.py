"""Each submission page shows its log: received, validated with N warnings, scoring started,
scored (and judged, errors), with times; error texts only for the submitter and staff; no
ground truth anywhere in it."""

from __future__ import annotations

import json
import random
from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.benchmarks.medvidbench.synth.predictions import shuffle_keeping_groups
from medvidbench.server.runtime import Runtime
from tests.web.conftest import login, token_for
from tests.web.test_api import upload


def test_a_scored_submission_logs_its_steps(
    client: TestClient,
    web_runtime: Runtime,
    synthetic: dict[str, Path],
    synthetic_gt: object,
    tmp_path: Path,
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    # the partial archetype with its records shuffled: order-only matches, one warning a task
    records = json.loads(synthetic["partial"].read_text())
    shuffled = tmp_path / "partial_shuffled.json"
    shuffled.write_text(json.dumps(shuffle_keeping_groups(records, random.Random(0))))
    sid = upload(client, token, shuffled, "Logged").json()["id"]
    detail = client.get(f"/api/v1/submissions/{sid}").json()
    kinds = [e["kind"] for e in detail["log"]]
    # validation's warnings are logged with their texts, after the count
    n = kinds.count("warning")
    assert n >= 2
    assert kinds == ["received", "validated", *["warning"] * n, "score started", "scored"]
    validated = detail["log"][1]["message"]
    assert validated.startswith("validated: partial,") and f"{n} warnings" in validated
    assert "not submitted:" in validated
    assert "matched to their test question by order alone" in detail["log"][2]["message"]
    assert detail["log"][-1]["message"].startswith("scored (leaderboard-v1, scorer ")
    assert all(e["at"] for e in detail["log"])
    page = client.get(f"/submissions/{sid}").text
    assert 'id="log"' in page and f"Log ({n + 4} events)" in page
    # no reference answer of the test set appears in the log
    answers = {s.answer for s in synthetic_gt.samples if len(s.answer) > 12}  # type: ignore[attr-defined]
    text = json.dumps(detail["log"])
    assert not any(a in text for a in answers)


def test_a_rejected_upload_logs_why(
    client: TestClient, web_runtime: Runtime, tmp_path: Path
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": "nope&&1&&2&&1.0", "qa_type": "tal", "prediction": "x"}]')
    refused = upload(client, token, bad, "Broken")
    assert refused.status_code == 422
    mine = client.get("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"}).json()
    sid = next(s["id"] for s in mine if s["model_name"] == "Broken")
    log = client.get(f"/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"})
    kinds = [(e["kind"], e["message"][:9]) for e in log.json()["log"]]
    assert kinds == [("received", "received "), ("rejected", "invalid: ")]
    page = client.get(f"/submissions/{sid}").text
    assert 'id="log" open' in page
    # on no board whatever its visibility: no control to change it, and a request is refused
    assert f'action="/submissions/{sid}/visibility"' not in page
    changed = client.post(
        f"/api/v1/submissions/{sid}/visibility",
        data={"visibility": "private"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert changed.status_code == 409 and "rejected" in changed.json()["message"]


def test_errors_are_logged_and_shown_only_to_the_submitter(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    from medvidbench.server.services import events
    from medvidbench.server.store.db import transaction

    login(client, web_runtime)
    sid = upload(client, token_for(client), synthetic["strong"], "Flaky").json()["id"]
    with transaction(web_runtime.sessions) as session:
        events.record(
            session, sid, "error", "scoring failed: OSError: disk full; it will be retried"
        )
    mine = client.get(f"/api/v1/submissions/{sid}").json()["log"]
    assert any("disk full" in e["message"] for e in mine)
    anonymous = TestClient(client.app).get(f"/api/v1/submissions/{sid}").json()["log"]
    hidden = next(e for e in anonymous if e["kind"] == "error")
    assert hidden["message"] == "details are shown to the submitter"
