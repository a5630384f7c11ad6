"""Creating an API token answers with a redirect (POST-redirect-GET): the new secret is shown
once on the account page, a reload there creates no second token, and the token works."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from medvidbench.server.runtime import Runtime
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import ApiToken
from tests.web.conftest import csrf, login

SHOWN = re.compile(r'id="new-token">(mvb_[^<]+)<')


def _tokens(runtime: Runtime) -> int:
    with runtime.sessions() as session:
        return int(session.scalar(select(func.count()).select_from(ApiToken)) or 0)


def test_a_token_is_created_once_and_shown_once(client: TestClient, web_runtime: Runtime) -> None:
    login(client, web_runtime)
    before = _tokens(web_runtime)
    made = client.post("/account/tokens", data={"name": "cli", "csrf": csrf(client, "/account")})
    assert made.status_code == 303 and made.headers["location"] == "/account#tokens"
    shown = client.get("/account")
    secret = SHOWN.search(shown.text)
    assert secret and shown.headers["cache-control"] == "no-store"
    reloaded = client.get("/account")  # what a browser's reload does after the redirect
    assert reloaded.status_code == 200 and not SHOWN.search(reloaded.text)
    assert _tokens(web_runtime) == before + 1
    visited = client.get("/account/tokens")  # the address typed or bookmarked: no 405
    assert visited.status_code == 303 and visited.headers["location"] == "/account#tokens"
    works = client.get("/api/v1/quota", headers={"Authorization": f"Bearer {secret.group(1)}"})
    assert works.status_code == 200, works.text


def test_a_revoked_or_stale_token_is_not_shown_after_the_redirect(
    client: TestClient, web_runtime: Runtime
) -> None:
    login(client, web_runtime)
    client.post("/account/tokens", data={"name": "old", "csrf": csrf(client, "/account")})
    with transaction(web_runtime.sessions) as session:  # as if the page came much later
        session.execute(update(ApiToken).values(created_at=datetime.now(UTC) - timedelta(hours=1)))
    assert not SHOWN.search(client.get("/account").text)
