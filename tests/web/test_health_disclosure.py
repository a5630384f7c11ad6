"""The health check names no internal address to anyone but an administrator, and never a
credential (#32 item 2: the anonymous answer showed http://user:pass@10.20.30.40:8000/v1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from medvidbench.server.web.app import create_app
from tests.web.conftest import login, token_for

JUDGE = "http://judge:hunter2@10.20.30.40:8000/v1?api-key=s3cr3t"


@pytest.fixture
def judged(web_runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    web_runtime.settings.judge_base_url = JUDGE
    web_runtime.settings.judge_enabled = True
    with TestClient(create_app(web_runtime), follow_redirects=False) as c:
        yield c


def _leaks(text: str) -> list[str]:
    return [s for s in ("hunter2", "s3cr3t", "judge:") if s in text]


def test_anonymous_and_submitters_see_no_judge_address(
    judged: TestClient, web_runtime: Runtime
) -> None:
    anonymous = judged.get("/api/v1/health")
    assert anonymous.status_code == 200
    assert anonymous.json()["judge"]["enabled"] is True
    assert anonymous.json()["judge"]["endpoint"] is None
    assert "10.20.30.40" not in anonymous.text and not _leaks(anonymous.text)
    login(judged, web_runtime, "plain", "submitter")
    token = token_for(judged)
    mine = judged.get("/api/v1/health", headers={"Authorization": f"Bearer {token}"})
    assert mine.json()["judge"]["endpoint"] is None
    forged = judged.get("/api/v1/health", headers={"Authorization": "Bearer mvb_nonsense"})
    assert forged.status_code == 200 and forged.json()["judge"]["endpoint"] is None


def test_an_administrator_sees_the_endpoint_without_credentials(
    judged: TestClient, web_runtime: Runtime, tmp_path: Path
) -> None:
    login(judged, web_runtime, "boss", "admin")
    token = token_for(judged)
    seen = judged.get("/api/v1/health", headers={"Authorization": f"Bearer {token}"})
    assert seen.json()["judge"]["endpoint"] == "10.20.30.40:8000/v1"
    assert not _leaks(seen.text)
