"""Web fixtures: the app over a migrated runtime (SQLite), jobs run synchronously."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from medvidbench.server.services.catalogue import seed_published
from medvidbench.server.web.app import create_app
from tests.server.conftest import (  # noqa: F401 (a fixture: cheap_password_hashes)
    build_runtime,
    cheap_password_hashes,
    make_user,
)

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture
def web_runtime(tmp_path: Path, synthetic: dict[str, Path]) -> Iterator[Runtime]:
    rt = build_runtime(tmp_path, None, synthetic["ground_truth"])
    seed_published(rt)
    yield rt
    rt.engine.dispose()


@pytest.fixture
def client(web_runtime: Runtime) -> Iterator[TestClient]:
    with TestClient(create_app(web_runtime), follow_redirects=False) as c:
        yield c


def csrf(client: TestClient, path: str = "/login") -> str:
    match = CSRF.search(client.get(path).text)
    assert match, f"no CSRF token on {path}"
    return match.group(1)


def login(
    client: TestClient, runtime: Runtime, name: str = "webuser", role: str = "submitter"
) -> None:
    make_user(runtime, name, role, team="Web Team")
    response = client.post(
        "/login",
        data={
            "username": name,
            "password": f"{name}-password-123",
            "csrf": csrf(client),
            "next": "/",
        },
    )
    assert response.status_code == 303, response.text


def token_for(client: TestClient) -> str:
    made = client.post("/account/tokens", data={"name": "t", "csrf": csrf(client, "/account")})
    assert made.status_code == 303 and made.headers["location"] == "/account#tokens"
    response = client.get("/account")  # POST-redirect-GET: the secret is shown here, once
    assert response.status_code == 200 and response.headers["cache-control"] == "no-store"
    match = re.search(r'id="new-token">(mvb_[^<]+)<', response.text)
    assert match, "token not shown"
    return match.group(1)
