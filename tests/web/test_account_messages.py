"""Accounts: the team typed at sign-up survives an error, shows on the account page and
prefills the submit form; sign-up, login and logout each confirm what happened."""

from __future__ import annotations

from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from tests.web.conftest import csrf


def test_team_survives_errors_and_prefills_the_submit_form(client: TestClient) -> None:
    short = client.post(
        "/signup",
        data={
            "username": "teamed",
            "password": "short",
            "team": "Vision Lab <b>",
            "csrf": csrf(client, "/signup"),
        },
    )
    assert short.status_code >= 400
    assert 'name="team" maxlength="120" value="Vision Lab &lt;b&gt;"' in short.text
    made = client.post(
        "/signup",
        data={
            "username": "teamed",
            "password": "a-long-enough-password",
            "team": "Vision Lab",
            "csrf": csrf(client, "/signup"),
        },
    )
    assert made.status_code == 303 and made.headers["location"] == "/account"
    account = client.get("/account").text
    assert 'id="notice">Your account is ready, and you are logged in.' in account
    assert "You are in <strong>Vision Lab</strong>" in account
    assert 'id="notice"' not in client.get("/account").text  # shown once
    form = client.get("/b/medvidbench/submit").text
    assert 'name="organisation" maxlength="120" value="Vision Lab"' in form


def test_login_and_logout_are_confirmed(client: TestClient, web_runtime: Runtime) -> None:
    from tests.server.conftest import make_user

    make_user(web_runtime, "confirm", "submitter")
    answer = client.post(
        "/login",
        data={
            "username": "confirm",
            "password": "confirm-password-123",
            "csrf": csrf(client),
            "next": "/b/medvidbench/board/official",
        },
    )
    assert answer.status_code == 303
    board = client.get("/b/medvidbench/board/official").text
    assert 'id="notice">You are logged in.' in board
    out = client.post("/logout", data={"csrf": csrf(client, "/")})
    assert out.status_code == 303
    assert 'id="notice">You are logged out.' in client.get("/").text
