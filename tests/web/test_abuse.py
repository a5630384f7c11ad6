"""Defences against abuse through sign-up: a throttle per address, admin approval, team joins."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from tests.server.conftest import make_user
from tests.web.conftest import csrf, login


def sign_up(client: TestClient, name: str, team: str = "") -> int:
    token = csrf(client, "/signup")
    answer = client.post(
        "/signup",
        data={"username": name, "password": f"{name}-password-1", "team": team, "csrf": token},
    )
    return answer.status_code


def test_sign_ups_per_address_are_throttled(client: TestClient, web_runtime: Runtime) -> None:
    web_runtime.settings.signup_per_address_per_day = 3
    assert [sign_up(client, f"probe{i}") for i in range(3)] == [303, 303, 303]
    refused = sign_up(client, "probe3")
    assert refused == 429
    page = client.post(
        "/signup",
        data={
            "username": "probe4",
            "password": "probe4-password-1",
            "csrf": csrf(client, "/signup"),
        },
    )
    assert "3 accounts were created from your network address in the last 24 hours" in page.text


def test_new_accounts_can_wait_for_an_admins_approval(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    web_runtime.settings.signup_approval = True
    assert sign_up(client, "newbie") == 303
    account = client.get("/account").text
    assert "Your account waits for an administrator's approval" in account
    token = csrf(client, "/b/medvidbench/submit")
    refused = client.post(
        "/b/medvidbench/submit",
        files={"file": ("p.json", synthetic["weak"].read_bytes(), "application/json")},
        data={"model_name": "Too early", "csrf": token},
    )
    assert refused.status_code == 403 and "approval" in refused.text
    admin = TestClient(client.app, follow_redirects=False)
    login(admin, web_runtime, "gatekeeper", "admin")
    assert "awaiting approval" in admin.get("/admin").text
    approved = admin.post(
        "/admin/approve",
        data={"username": "newbie", "confirm": "yes", "csrf": csrf(admin, "/admin")},
    )
    assert approved.status_code == 303
    accepted = client.post(
        "/b/medvidbench/submit",
        files={"file": ("p.json", synthetic["weak"].read_bytes(), "application/json")},
        data={"model_name": "After approval", "csrf": csrf(client, "/b/medvidbench/submit")},
    )
    assert accepted.status_code == 303, accepted.text[:500]


def test_joining_a_team_through_the_pages(client: TestClient, web_runtime: Runtime) -> None:
    make_user(web_runtime, "lab-owner", team="Pages Lab")
    assert sign_up(client, "joiner", team="pages lab") == 303
    assert "Your request to join <strong>Pages Lab</strong> waits" in client.get("/account").text
    owner = TestClient(client.app, follow_redirects=False)
    token = csrf(owner, "/login")
    owner.post(
        "/login",
        data={"username": "lab-owner", "password": "lab-owner-password-123", "csrf": token},
    )
    page = owner.get("/account").text
    assert "joiner" in page and 'id="team-requests"' in page
    with web_runtime.sessions() as session:
        from sqlalchemy import select

        from medvidbench.server.store.models import User

        joiner_id = session.scalar(select(User.id).where(User.username == "joiner"))
    decided = owner.post(
        f"/account/team/requests/{joiner_id}",
        data={"decision": "approve", "csrf": csrf(owner, "/account")},
    )
    assert decided.status_code == 303
    assert "You are in <strong>Pages Lab</strong>" in client.get("/account").text
    # Someone else's request cannot be decided by a plain member.
    assert sign_up(TestClient(client.app, follow_redirects=False), "other", team="Pages Lab") == 303
    other_id = joiner_id + 1
    forged = client.post(
        f"/account/team/requests/{other_id}",
        data={"decision": "approve", "csrf": csrf(client, "/account")},
    )
    assert forged.status_code == 404
