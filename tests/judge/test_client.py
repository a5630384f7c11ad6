"""The judge client against a real HTTP server on loopback: retries, failures, cache."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from medvidbench.benchmarks.medvidbench.rubric import RUBRIC
from medvidbench.core.config import Settings
from medvidbench.core.errors import UsageError
from medvidbench.core.judge.cache import MemoryJudgeCache, SQLiteJudgeCache, cache_key
from medvidbench.core.judge.client import Judge, JudgeConfig, JudgeRequest
from medvidbench.core.judge.fake_server import FakeJudgeServer


def requests_for(config: JudgeConfig, n: int) -> list[JudgeRequest]:
    out = []
    for i in range(n):
        pred, ref = f"the nurse checks chart {i}", f"the nurse checks the chart {i}"
        out.append(
            JudgeRequest(
                cache_key(config.config_id, "video_summary", pred, ref),
                "video_summary",
                pred,
                ref,
                RUBRIC,
            )
        )
    return out


def config(server: FakeJudgeServer, **kw: object) -> JudgeConfig:
    base = {
        "model": "judge",
        "base_url": server.url,
        "api_key": "k",
        "concurrency": 8,
        "timeout": 2.0,
    }
    base.update(kw)
    return JudgeConfig(**base)  # type: ignore[arg-type]


def test_all_pairs_judged_once_and_cached() -> None:
    with FakeJudgeServer() as server:
        cfg = config(server)
        cache = MemoryJudgeCache()
        judge = Judge(cfg, cache)
        reqs = requests_for(cfg, 20)
        out = judge.judge_all(reqs + reqs[:5])  # repeats are judged once
        assert len(out) == 20 and server.requests == 20 and len(cache) == 20
        again = Judge(cfg, cache).judge_all(reqs)
        assert again == out and server.requests == 20
        p = judge.provenance()
        assert p["model_reported"] == "fake-judge-1" and p["calls"] == 20 and p["failures"] == 0
        assert p["endpoint"] == server.url.removeprefix("http://")


def test_rate_limits_errors_and_malformed_answers_are_retried() -> None:
    with FakeJudgeServer(rate_429=0.2, rate_500=0.1, rate_malformed=0.1, seed=3) as server:
        judge = Judge(config(server), MemoryJudgeCache())
        out = judge.judge_all(requests_for(judge.config, 40))
        assert len(out) == 40
        s = judge.stats
        assert s.failures == 0 and s.rate_limited == server.injected["429"] > 0
        assert s.retries == server.requests - 40 > 0


def test_retry_after_is_honoured() -> None:
    with FakeJudgeServer(rate_429=1.0) as server:  # every answer is a 429 with retry-after-ms 200
        judge = Judge(config(server, max_attempts=3), MemoryJudgeCache())
        waits: list[float] = []
        chosen = judge._wait
        judge._wait = lambda state: waits.append(chosen(state)) or waits[-1]  # type: ignore[method-assign]
        started = time.perf_counter()
        out = judge.judge_all(requests_for(judge.config, 1))
        elapsed = time.perf_counter() - started
        assert out == {} and judge.stats.failures == 1 and server.requests == 3
        # two waits of 200 ms, not the 1 s of retry-after (tenacity asks for a third after the
        # last attempt and does not sleep it); two retries counted, not three
        assert waits[:2] == [0.2, 0.2] and judge.stats.retries == 2
        assert elapsed >= 0.4  # and waited
        assert judge.stats.failure_reasons == {"RateLimitError": 1}


def test_a_judge_found_down_counts_what_was_sent_and_why_each_pair_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every answer an error: 16 pairs are sent once each and fail with the server's error;
    the judge is then down and the other 24 are never sent. None of them was sent twice, so
    no retry is counted (tenacity's retries of an unsent pair send nothing), and no pair that
    got an answer is said to be 'NotSent'."""
    from medvidbench.core.judge import client

    monkeypatch.setattr(client, "_BACKOFF_BASE", 0.01)
    with FakeJudgeServer(rate_500=1.0) as server:
        judge = Judge(config(server, concurrency=1, max_attempts=3), MemoryJudgeCache())
        assert judge.judge_all(requests_for(judge.config, 40)) == {}
        s = judge.stats
        assert s.calls == server.requests == client._DOWN_AFTER
        assert s.retries == 0 and s.failures == 40
        assert s.failure_reasons == {"InternalServerError": 16, "NotSent": 24}
        assert judge.provenance()["retries"] == 0


def test_each_judge_all_is_counted_on_its_own() -> None:
    """A judge used again (a training run's batches) reports each call, not their sum: a
    second call whose pairs are all cached made no request, whatever the first one did."""
    with FakeJudgeServer(rate_500=0.3, seed=5) as server:
        judge = Judge(config(server, max_attempts=5), MemoryJudgeCache())
        reqs = requests_for(judge.config, 10)
        first = judge.judge_all(reqs)
        assert judge.stats.calls == server.requests > 10
        second = judge.judge_all(reqs)
        assert second == first
        p = judge.provenance()
        assert p["pairs"] == 10 and p["cache_hits"] == len(first) and p["calls"] == 0
        assert p["retries"] == 0 and p["effective_concurrency"] is None


def test_timeouts_are_retried_then_counted_as_failures() -> None:
    with FakeJudgeServer(rate_timeout=1.0, timeout_sleep=1.0) as server:
        judge = Judge(config(server, timeout=0.3, max_attempts=2), MemoryJudgeCache())
        assert judge.judge_all(requests_for(judge.config, 2)) == {}
        assert judge.stats.failures == 2 and judge.provenance()["success_rate"] == 0.0
        assert judge.stats.failure_reasons == {"APITimeoutError": 2}


def test_malformed_answers_every_time_fail_the_pair() -> None:
    with FakeJudgeServer(rate_malformed=1.0) as server:
        judge = Judge(config(server, max_attempts=3), MemoryJudgeCache())
        assert judge.judge_all(requests_for(judge.config, 1)) == {}
        assert server.requests == 3 and judge.stats.failure_reasons == {"JudgeAnswerError": 1}


def test_authentication_errors_are_not_retried() -> None:
    with FakeJudgeServer(api_key="right") as server:
        judge = Judge(config(server, api_key="wrong"), MemoryJudgeCache())
        assert judge.judge_all(requests_for(judge.config, 2)) == {}
        assert judge.stats.calls == 2 and judge.stats.retries == 0
        assert judge.stats.failure_reasons == {"AuthenticationError": 2}
        assert server.answered == 0


def test_requests_per_minute_limit() -> None:
    with FakeJudgeServer() as server:
        judge = Judge(config(server, rpm=600), MemoryJudgeCache())
        started = time.perf_counter()
        judge.judge_all(requests_for(judge.config, 15))
        assert time.perf_counter() - started >= 1.2  # one request per 100 ms, no burst


def test_sqlite_cache_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "c" / "judge.sqlite3"
    with FakeJudgeServer() as server:
        cfg = config(server)
        first = Judge(cfg, SQLiteJudgeCache(path)).judge_all(requests_for(cfg, 5))
        reopened = SQLiteJudgeCache(path)
        assert len(reopened) == 5
        assert Judge(cfg, reopened).judge_all(requests_for(cfg, 5)) == first
        assert server.requests == 5


def test_config_identity_separates_incomparable_judges() -> None:
    a = JudgeConfig(model="gpt-4.1", base_url="http://h:1/v1")
    assert a.config_id != JudgeConfig(model="gpt-4.1-mini", base_url="http://h:1/v1").config_id
    assert a.config_id != JudgeConfig(model="gpt-4.1", base_url="http://h:2/v1").config_id
    assert (
        a.config_id
        != JudgeConfig(model="gpt-4.1", base_url="http://h:1/v1", temperature=0.5).config_id
    )
    assert (
        a.config_id
        == JudgeConfig(
            model="gpt-4.1", base_url="http://h:1/v1", api_key="secret", concurrency=3
        ).config_id
    )


def test_from_settings_needs_a_key_for_openai_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "MEDVIDBENCH_JUDGE_API_KEY",
        "MEDVIDBENCH_JUDGE_BASE_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        JudgeConfig.from_settings(Settings())
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    local = JudgeConfig.from_settings(Settings(), model="llama")
    assert local.model == "llama" and local.endpoint == "127.0.0.1:9/v1"
