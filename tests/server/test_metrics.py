"""/metrics: Prometheus text after a submission is scored and judged; refused unless allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from medvidbench.core.judge.fake_server import FakeJudgeServer
from medvidbench.server.metrics import scrape_allowed
from medvidbench.server.services.submissions import submit
from medvidbench.server.web.app import create_app
from tests.server.conftest import build_runtime, make_user

TOKEN = "scrape-token-0123456789"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape, keyed by name and labels."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(
    found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def scrape(client: TestClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    answer = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return samples(answer.text)


def test_scrape_after_a_judged_submission(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    with FakeJudgeServer(latency=0.0) as judge:
        runtime = build_runtime(
            tmp_path,
            None,
            synthetic["ground_truth"],
            judge_enabled=True,
            judge_base_url=judge.url,
            judge_api_key="k",
            metrics_token=TOKEN,
        )
        with TestClient(create_app(runtime)) as client:
            before = scrape(client)
            sub = submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Watched")
            client.get("/api/v1/health")
            client.get(f"/api/v1/submissions/{sub.id}")
            after = scrape(client)
            asked = judge.requests
    # What the database holds, read at scrape time.
    assert value(after, "medvidbench_submissions", benchmark="medvidbench", status="complete") == 1
    assert value(before, "medvidbench_submissions", benchmark="medvidbench", status="complete") == 0
    # every state is reported, a known 0 included (an absent series reads as missing data)
    for state in ("queued", "scoring", "scored", "judging", "complete", "failed", "rejected"):
        labels = frozenset({"benchmark": "medvidbench", "status": state}.items())
        assert ("medvidbench_submissions", labels) in before, state
    # One score job and one judge job, both done, timed.
    for job in ("score", "judge"):
        key = {"step": job, "benchmark": "medvidbench", "outcome": "done"}
        count = "medvidbench_job_duration_seconds_count"
        assert value(after, count, **key) - value(before, count, **key) == 1
        assert value(after, "medvidbench_job_duration_seconds_sum", **key) > value(
            before, "medvidbench_job_duration_seconds_sum", **key
        )
    # Every judge request the fake endpoint answered, counted and timed.
    sent = value(after, "medvidbench_judge_requests_total", outcome="ok") - value(
        before, "medvidbench_judge_requests_total", outcome="ok"
    )
    assert asked > 0 and sent == asked
    timed = value(after, "medvidbench_judge_request_duration_seconds_count") - value(
        before, "medvidbench_judge_request_duration_seconds_count"
    )
    assert timed == asked
    # HTTP latency by route template, never by raw path (no series per submission id).
    routes = {dict(labels).get("route") for (name, labels) in after if "http_request" in name}
    assert "/api/v1/health" in routes and "/api/v1/submissions/{submission_id}" in routes
    assert f"/api/v1/submissions/{sub.id}" not in routes
    ok = value(
        after,
        "medvidbench_http_request_duration_seconds_count",
        method="GET",
        route="/api/v1/health",
        status="2xx",
    )
    assert ok >= 1


def test_judge_cache_hits_are_counted(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    from medvidbench.server.metrics import instruments
    from medvidbench.server.services.evaluations import request_rejudge

    with FakeJudgeServer(latency=0.0) as judge:
        runtime = build_runtime(
            tmp_path,
            None,
            synthetic["ground_truth"],
            judge_enabled=True,
            judge_base_url=judge.url,
            judge_api_key="k",
        )
        sub = submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Cached")
        asked = judge.requests
        hits = instruments().judge_cache_hits._value.get()
        assert request_rejudge(runtime, sub.id)
        runtime.queue.judge(sub.id)  # type: ignore[attr-defined]
        assert judge.requests == asked  # nothing asked again
    assert instruments().judge_cache_hits._value.get() - hits == asked


def test_metrics_are_not_public(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    runtime = build_runtime(tmp_path, None, synthetic["ground_truth"])
    with TestClient(create_app(runtime)) as client:
        assert client.get("/metrics").status_code == 404  # not configured: not there at all
        runtime.settings.metrics_token = SecretStr(TOKEN)
        refused = client.get("/metrics")
        assert refused.status_code == 401 and "medvidbench_" not in refused.text
        assert refused.headers["www-authenticate"].startswith("Bearer")
        wrong = client.get("/metrics", headers={"Authorization": "Bearer not-the-token"})
        assert wrong.status_code == 401
        assert (
            client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        )


def test_an_empty_token_is_no_token(
    tmp_path: Path, synthetic: dict[str, Path], monkeypatch: Any
) -> None:
    """env.example's ``MEDVIDBENCH_METRICS_TOKEN=`` uncommented as it is: as if unset (404),
    never a token that an empty ``Authorization: Bearer`` matches (an operator's walk got the
    metrics of the web and of a worker's port that way)."""
    from medvidbench.core.config import load_settings

    for empty in ("", "  "):
        monkeypatch.setenv("MEDVIDBENCH_METRICS_TOKEN", empty)
        assert load_settings().metrics_token is None
    runtime = build_runtime(tmp_path, None, synthetic["ground_truth"], metrics_allow="10.0.0.0/8")
    runtime.settings.metrics_token = SecretStr("")  # however it got there
    assert scrape_allowed(runtime, "192.168.1.1", "Bearer") is False
    assert scrape_allowed(runtime, "192.168.1.1", "Bearer ") is False
    with TestClient(create_app(runtime)) as client:
        for header in ("Bearer", "Bearer ", "bearer  "):
            answer = client.get("/metrics", headers={"Authorization": header})
            assert answer.status_code == 401 and "medvidbench_" not in answer.text


def test_allowed_addresses(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    runtime = build_runtime(
        tmp_path, None, synthetic["ground_truth"], metrics_allow="10.0.0.0/8, ::1"
    )
    assert scrape_allowed(runtime, "10.1.2.3", None) is True
    assert scrape_allowed(runtime, "::1", None) is True
    assert scrape_allowed(runtime, "192.168.1.1", None) is False
    assert scrape_allowed(runtime, None, "Bearer x") is False  # no token configured
    assert scrape_allowed(runtime, "not an address", None) is False


def test_a_wrong_allowed_network_stops_the_start() -> None:
    import pytest

    from medvidbench.core.config import load_settings
    from medvidbench.core.errors import UsageError

    with pytest.raises(UsageError, match=r"MEDVIDBENCH_METRICS_ALLOW: .*'10\.0\.0\.0/33'"):
        load_settings(metrics_allow="10.0.0.0/33")


def test_a_worker_process_jobs_show_on_the_web_scrape(tmp_path: Path) -> None:
    """Two processes (serve running no jobs, and a worker) share PROMETHEUS_MULTIPROC_DIR: the
    web's scrape adds the worker's job metrics to its own HTTP ones."""
    import os
    import signal
    import time

    import httpx

    from medvidbench.core.config import Settings
    from medvidbench.server.jobs import attach_queue
    from medvidbench.server.runtime import Runtime
    from tests.server.conftest import scored_count, start_worker
    from tests.web.live import live_server

    shared = {
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prometheus"),  # made by serve and worker
        "MEDVIDBENCH_METRICS_TOKEN": TOKEN,
        "MEDVIDBENCH_JUDGE_ENABLED": "false",
        "MEDVIDBENCH_BENCHMARKS": "medvidbench",
    }
    data = tmp_path / "data"
    with live_server(data, env=shared, args=("--workers", "0")) as live:
        runtime = Runtime(Settings(data_dir=data, benchmarks="medvidbench"))  # type: ignore[call-arg]
        attach_queue(runtime)  # the SQLite queue of that data folder
        demo = data / "demo" / "medvidbench" / "predictions_weak.json"
        submit(runtime, make_user(runtime), demo.read_bytes(), "Two processes")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEDVIDBENCH_"))}
        worker = start_worker(data, {**env, **shared})
        try:
            deadline = time.monotonic() + 120
            key = {"step": "score", "benchmark": "medvidbench", "outcome": "done"}
            while scored_count(runtime) < 1 and time.monotonic() < deadline:
                time.sleep(0.1)
            # the job's duration is observed after its commit: wait for it, not a while
            while time.monotonic() < deadline:
                seen = httpx.get(
                    f"{live.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
                )
                if value(samples(seen.text), "medvidbench_job_duration_seconds_count", **key):
                    break
                time.sleep(0.1)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=30)
        answer = httpx.get(f"{live.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        runtime.engine.dispose()
    assert answer.status_code == 200, answer.text
    found = samples(answer.text)
    assert value(found, "medvidbench_job_duration_seconds_count", **key) == 1  # the worker's
    health = {"method": "GET", "route": "/api/v1/health", "status": "2xx"}
    assert value(found, "medvidbench_http_request_duration_seconds_count", **health) >= 1
    assert value(found, "medvidbench_submissions", benchmark="medvidbench", status="scored") == 1
    assert list((tmp_path / "prometheus").glob("*.db"))  # the processes' value files
