"""Trust under attack: limits, roles, rate limits, cookies, and hidden labels staying hidden."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from medvidbench.server.runtime import Runtime
from medvidbench.server.store.models import Submission
from tests.web.conftest import csrf, login, token_for

ADMIN_ACTIONS = ["role", "approve", "promote", "add", "remove", "delete", "rescore"]


def test_oversized_uploads_are_refused_while_streaming(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    web_runtime.settings.max_submission_bytes = 10_000
    headers = {"Authorization": f"Bearer {token}"}
    declared = client.post(
        "/api/v1/submissions",
        headers=headers,
        data={"model_name": "x"},
        files={"file": ("p.json", b"[" + b" " * (3 << 20) + b"]")},
    )
    assert declared.status_code == 413 and declared.json()["error"] == "PayloadTooLargeError"

    def stream():  # type: ignore[no-untyped-def]
        for _ in range(8):
            yield b"x" * (1 << 20)

    streamed = client.post(
        "/api/v1/submissions",
        content=stream(),
        headers={**headers, "Content-Type": "multipart/form-data; boundary=b"},
    )
    assert streamed.status_code == 413
    with web_runtime.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Submission)) == 0
    assert not (web_runtime.data_dir / "submissions").exists() or not any(
        (web_runtime.data_dir / "submissions").iterdir()
    )


@pytest.mark.parametrize("action", ADMIN_ACTIONS)
def test_every_admin_action_needs_the_admin_role(
    client: TestClient, web_runtime: Runtime, action: str
) -> None:
    token = csrf(client, "/login")
    assert (
        client.post(f"/admin/{action}", data={"csrf": token, "confirm": "yes"}).status_code == 401
    )
    login(client, web_runtime)
    token = csrf(client, "/")
    response = client.post(
        f"/admin/{action}",
        data={
            "csrf": token,
            "confirm": "yes",
            "submission_id": "1",
            "entry_id": "1",
            "username": "webuser",
            "role": "admin",
        },
    )
    assert response.status_code == 403


def test_admin_page_and_private_api(client: TestClient, web_runtime: Runtime) -> None:
    assert client.get("/admin").status_code == 401
    assert client.get("/api/v1/submissions").status_code == 401
    assert (
        client.post(
            "/api/v1/submissions", data={"model_name": "x"}, files={"file": ("p.json", b"[]")}
        ).status_code
        == 401
    )
    login(client, web_runtime)
    assert client.get("/admin").status_code == 403


def test_login_is_rate_limited(client: TestClient, web_runtime: Runtime) -> None:
    login(client, web_runtime, "victim")
    client.post("/logout", data={"csrf": csrf(client, "/")})
    token = csrf(client)
    for _ in range(10):
        r = client.post(
            "/login", data={"username": "victim", "password": "guess-guess-guess", "csrf": token}
        )
        assert r.status_code == 401
    blocked = client.post(
        "/login", data={"username": "victim", "password": "victim-password-123", "csrf": token}
    )
    assert blocked.status_code == 429 and "too many failed attempts" in blocked.text


def test_session_cookie_flags_and_open_redirects(client: TestClient, web_runtime: Runtime) -> None:
    from tests.server.conftest import make_user

    make_user(web_runtime, "cookie")
    response = client.post(
        "/login",
        data={
            "username": "cookie",
            "password": "cookie-password-123",
            "csrf": csrf(client),
            "next": "//evil.example/steal",
        },
    )
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie
    assert response.headers["location"] == "/"


def test_public_server_refuses_to_start_without_secret_and_admin(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "medvidbench",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "8999",
            "--data-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "refusing to start" in out.stderr


def ground_truth_strings(path: Path) -> set[str]:
    """Reference answers and struc_info snippets that must never leave the server."""
    secrets = set()
    for record in json.loads(path.read_text()):
        answer = record["conversations"][-1]["value"]
        if len(answer) >= 25:
            secrets.add(answer)
        structure = json.dumps(record["struc_info"])
        if len(structure) > 30:
            secrets.add(structure[:60])
    return secrets


def test_hidden_labels_stay_hidden(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime, "prober")
    token = token_for(client)
    headers = {"Authorization": f"Bearer {token}"}
    with synthetic["weak"].open("rb") as fh:
        created = client.post(
            "/api/v1/submissions",
            headers=headers,
            files={"file": ("w.json", fh)},
            data={"model_name": "Prober"},
        )
    sid = created.json()["id"]
    # a file that names real ids with wrong qa_types: errors must not echo answers
    records = json.loads(synthetic["weak"].read_text())[:50]
    for r in records:
        r["qa_type"] = "stg" if r["qa_type"] != "stg" else "tal"
    refused = client.post(
        "/api/v1/submissions",
        headers=headers,
        data={"model_name": "P2"},
        files={"file": ("x.json", json.dumps(records).encode())},
    )
    assert refused.status_code == 422
    pages = [
        "/",
        "/b/medvidbench/board/official",
        "/b/medvidbench/board/community",
        "/b/medvidbench/about",
        "/b/medvidbench/compare",
        "/account",
        f"/submissions/{sid}",
        "/api/v1/health",
        "/api/v1/benchmarks",
        "/api/v1/metrics",
        "/api/v1/boards/community",
        "/api/v1/boards/community?format=csv",
        f"/api/v1/submissions/{sid}",
        "/api/v1/submissions",
        "/openapi.json",
        "/api/v1/compare?entries=1,2",
        "/submissions/999999",
        "/nope",
    ]
    texts = [refused.text] + [client.get(p, headers=headers).text for p in pages]
    anonymous = TestClient(client.app)
    texts += [anonymous.get(p).text for p in pages]
    weak = {r["prediction"] for r in json.loads(synthetic["weak"].read_text())}
    secrets = {s for s in ground_truth_strings(synthetic["ground_truth"]) if s not in weak}
    assert len(secrets) > 100
    leaked = [s for s in secrets if any(s in t for t in texts)]
    assert leaked == []
    for text in texts:
        assert not re.search(r'"(bbox_dict|dc_segments|skill_scores|cvs_scores)"', text)
