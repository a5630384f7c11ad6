"""Remaining quota: on the submit page, in the API (a quota endpoint and X-RateLimit-*
headers), from `medvidbench submit`; a refused submission says when the next one is possible."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from tests.server.conftest import postgres_url  # noqa: F401 (a fixture)
from tests.web.conftest import login, token_for
from tests.web.test_api import upload


def test_quota_is_shown_and_a_refusal_says_when_to_retry(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    web_runtime.settings.quota_per_day = 2
    web_runtime.settings.quota_per_month = 5
    login(client, web_runtime)
    token = token_for(client)
    auth = {"Authorization": f"Bearer {token}"}
    fresh = client.get("/api/v1/benchmarks/medvidbench/quota", headers=auth).json()
    assert fresh["windows"] == [
        {"period": "day", "limit": 2, "used": 0, "remaining": 2, "resets_at": None},
        {"period": "30 days", "limit": 5, "used": 0, "remaining": 5, "resets_at": None},
    ]
    assert TestClient(client.app).get("/api/v1/quota").status_code == 401  # yours: signed in
    assert (
        "<strong>2 of 2</strong> submissions left for the day"
        in client.get("/b/medvidbench/submit").text
    )

    first = upload(client, token, synthetic["strong"], "Quota-1")
    assert first.status_code == 202
    assert first.headers["X-RateLimit-Limit"] == "2"
    assert first.headers["X-RateLimit-Remaining"] == "1"
    assert first.headers["X-RateLimit-Window"] == "day"
    reset = int(first.headers["X-RateLimit-Reset"])
    assert 0 < reset - datetime.now(UTC).timestamp() <= 86_400
    assert upload(client, token, synthetic["weak"], "Quota-2").status_code == 202
    page = client.get("/b/medvidbench/submit").text
    assert "<strong>0 of 2</strong> submissions left for the day (the next one from" in page
    assert "<strong>3 of 5</strong> submissions left for the 30 days" in page
    # a member's own runs from before joining count too: teammates' figures may differ
    assert "counting your team's submissions and your own from before you joined it" in page

    refused = upload(client, token, synthetic["shuffled"], "Quota-3")
    assert refused.status_code == 429
    body = refused.json()
    assert "the next one is possible from" in body["message"] and body["retry_at"]
    assert 0 < int(refused.headers["Retry-After"]) <= 86_401
    after = client.get("/api/v1/quota", headers=auth).json()["windows"][0]
    assert after["used"] == 2 and after["remaining"] == 0 and after["resets_at"]


def test_no_quota_no_headers(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime)
    created = upload(client, token_for(client), synthetic["strong"], "Unlimited")
    assert created.status_code == 202 and "X-RateLimit-Remaining" not in created.headers
    assert 'id="quota-left"' not in client.get("/b/medvidbench/submit").text


class _MeetingQueue:
    """Holds each upload's job until two have been queued: both uploads have committed before
    either answers, as two uploads at the same moment may."""

    def __init__(self) -> None:
        import threading

        self.meeting = threading.Barrier(2, timeout=30)

    def enqueue_score(self, submission_id: int) -> None:
        self.meeting.wait()

    def enqueue_judge(self, submission_id: int) -> None:
        pass

    def enqueue_rescore(self, submission_id: int, profile: str) -> None:
        pass

    def check(self) -> None:
        pass

    def depth(self) -> None:
        return None


def test_two_uploads_at_once_report_what_each_left(
    tmp_path: Path, synthetic: dict[str, Path], request: pytest.FixtureRequest
) -> None:
    """The figure is read in the transaction that accepted the upload (PostgreSQL: both
    uploads run at once), so two concurrent uploads never both say "4 of 5 left"."""
    from concurrent.futures import ThreadPoolExecutor

    from medvidbench.server.web.app import create_app
    from tests.server.conftest import build_runtime, variants

    url = request.getfixturevalue("postgres_url")
    rt = build_runtime(tmp_path, url, synthetic["ground_truth"], quota_per_day=5)
    rt.queue = _MeetingQueue()
    files = []
    for n, content in enumerate(variants(synthetic["strong"], 2)):
        files.append(tmp_path / f"at-once-{n}.json")
        files[-1].write_bytes(content)
    with TestClient(create_app(rt), follow_redirects=False) as client:
        login(client, rt)
        token = token_for(client)
        with ThreadPoolExecutor(2) as pool:
            answers = list(
                pool.map(lambda n: upload(client, token, files[n], f"At-Once-{n}"), range(2))
            )
    assert [a.status_code for a in answers] == [202, 202]
    assert sorted(a.headers["X-RateLimit-Remaining"] for a in answers) == ["3", "4"]
    rt.engine.dispose()
