"""An OpenAI-compatible judge client: concurrent, rate-limited, retrying, cached.

Works against any endpoint speaking the chat-completions protocol (OpenAI, Azure, vLLM,
Ollama, llama.cpp). Each (prediction, reference) pair is judged at most once per judge
configuration: cached judgements are reused, and every new one is stored the moment it arrives.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medvidbench.core.config import Settings, endpoint_identity
from medvidbench.core.errors import UsageError
from medvidbench.core.judge.cache import JudgeCache, Judgement
from medvidbench.core.judge.parse import parse_scores
from medvidbench.core.judge.rubric import Rubric

# USD per million (input, output) tokens of common judges, for the cost estimate only.
KNOWN_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
}
_BACKOFF_BASE, _BACKOFF_CAP, _RETRY_AFTER_CAP = 0.5, 30.0, 60.0
# A judge whose last this many attempts all failed without an answer (no connection, a server
# error, a timeout; not a rate limit) is down: the rest of that judge_all's requests are
# counted as failed without being sent ("NotSent"), so an outage costs a few requests, not
# every pair times every retry. Each judge_all starts by trying again.
_DOWN_AFTER = 16


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """Everything that identifies a judge and how it is called."""

    model: str = "gpt-4.1"
    base_url: str | None = None
    api_key: str = ""
    temperature: float = 0.0
    seed: int | None = 0
    concurrency: int = 32  # the measured default (docs/performance.md)
    rpm: int = 0
    timeout: float = 30.0
    max_attempts: int = 5
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    prompt_version: str = ""  # the benchmark's rubric version (part of the configuration id)

    @classmethod
    def from_settings(
        cls, settings: Settings, model: str | None = None, prompt_version: str = ""
    ) -> JudgeConfig:
        """The judge the settings describe (OPENAI_BASE_URL / OPENAI_API_KEY are honoured).

        Raises:
            UsageError: when OpenAI's own endpoint would be called without an API key.
        """
        key = settings.judge_api_key.get_secret_value() if settings.judge_api_key else ""
        if not key and settings.judge_base_url is None:
            raise UsageError(
                "the judge needs OPENAI_API_KEY (or OPENAI_BASE_URL pointing at a "
                "local OpenAI-compatible server such as vLLM or Ollama)"
            )
        return cls(
            model=model or settings.judge_model,
            base_url=settings.judge_base_url,
            api_key=key,
            temperature=settings.judge_temperature,
            seed=settings.judge_seed,
            concurrency=settings.judge_concurrency,
            rpm=settings.judge_rpm,
            timeout=settings.judge_timeout,
            max_attempts=settings.judge_max_attempts,
            price_input_per_mtok=settings.judge_price_input_per_mtok,
            price_output_per_mtok=settings.judge_price_output_per_mtok,
            prompt_version=prompt_version,
        )

    @property
    def endpoint(self) -> str:
        """The endpoint's identity: host and path, without credentials or query."""
        return endpoint_identity(self.base_url or "https://api.openai.com/v1")

    @property
    def config_id(self) -> str:
        """Scores are comparable only between runs with the same config_id."""
        blob = json.dumps(
            [self.model, self.endpoint, self.prompt_version, self.temperature, self.seed]
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """One pair to judge."""

    key: str
    task: str
    prediction: str
    reference: str
    rubric: Rubric  # what the judge is asked, and which aspect scores its answer must hold


@dataclass(slots=True)
class JudgeStats:
    """What judging cost and how it went."""

    requested: int = 0
    cache_hits: int = 0
    calls: int = 0
    succeeded: int = 0
    failures: int = 0
    retries: int = 0
    rate_limited: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    wall_seconds: float = 0.0
    # For the effective concurrency: the time requests were in flight, summed, over the span
    # from the first request sent to the last answer received (monotonic clock).
    in_flight_seconds: float = 0.0
    first_sent: float | None = None
    last_answered: float | None = None
    models_reported: Counter[str] = field(default_factory=Counter)
    failure_reasons: Counter[str] = field(default_factory=Counter)


class _Failed(Exception):
    """An attempt that must not be retried (authentication, bad request)."""


class _NotSent(_Failed):
    """A request not sent because the judge is down (:data:`_DOWN_AFTER`)."""


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        if "retry-after-ms" in headers:
            return min(float(headers["retry-after-ms"]) / 1000, _RETRY_AFTER_CAP)
        if "retry-after" in headers:
            return min(float(headers["retry-after"]), _RETRY_AFTER_CAP)
    except ValueError:
        return None
    return None


class Judge:
    """Judges pairs with an OpenAI-compatible endpoint, through a cache."""

    def __init__(
        self,
        config: JudgeConfig,
        cache: JudgeCache,
        observer: Callable[[float, str], None] | None = None,
    ) -> None:
        """A judge over ``cache``; ``observer`` (when given) is told each request's seconds
        and outcome (``ok``, ``error``, ``rate_limited``) as it is answered (the server's
        metrics)."""
        self.config, self.cache = config, cache
        self.observer = observer
        self.stats = JudgeStats()
        # The last judge_all's failed requests: key -> why (an exception's name; "NotSent").
        self.last_failures: dict[str, str] = {}
        self._failing = 0  # attempts failed without an answer since the last answer
        # The SDK takes ~0.4 s to import. A Judge exists only where judging was asked for, so
        # pay it here, before the evaluation starts, not while its first request waits.
        import openai  # noqa: F401
        import tenacity  # noqa: F401

    def judge_all(
        self, requests: list[JudgeRequest], progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Judgement]:
        """Judgements for every request that succeeded (cached or new), keyed by request key.

        :attr:`stats` (and so :meth:`provenance`) describe this call alone: a judge used again
        (a training run's batches, say) starts each call from zero.
        """
        started = time.perf_counter()
        self.last_failures, self._failing = {}, 0
        self.stats = JudgeStats()
        unique = list({r.key: r for r in requests}.values())
        self.stats.requested += len(unique)
        found = self.cache.get_many([r.key for r in unique])
        self.stats.cache_hits += len(found)
        todo = [r for r in unique if r.key not in found]
        if todo:
            found.update(asyncio.run(self._run(todo, progress)))
        for j in found.values():
            self.stats.models_reported[j.model_reported] += 1
        self.stats.wall_seconds += time.perf_counter() - started
        return found

    async def _run(
        self, todo: list[JudgeRequest], progress: Callable[[int, int], None] | None
    ) -> dict[str, Judgement]:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            base_url=self.config.base_url,
            api_key=self.config.api_key or "none",
            max_retries=0,
            timeout=self.config.timeout,
        )
        slots = asyncio.Semaphore(self.config.concurrency)
        limiter = None
        if self.config.rpm:
            from aiolimiter import AsyncLimiter

            # One request per 60/rpm seconds: a bucket of size rpm would allow a burst of rpm.
            limiter = AsyncLimiter(1, 60 / self.config.rpm)
        done = 0
        out: dict[str, Judgement] = {}

        async def one(req: JudgeRequest) -> None:
            nonlocal done
            judgement = await self._judge(client, slots, limiter, req)
            if judgement is not None:
                out[req.key] = judgement
            done += 1
            if progress:
                progress(done, len(todo))

        try:
            await asyncio.gather(*(one(r) for r in todo))
        finally:
            await client.close()
        return out

    async def _judge(
        self, client: Any, slots: asyncio.Semaphore, limiter: Any, req: JudgeRequest
    ) -> Judgement | None:
        from tenacity import AsyncRetrying, retry_if_not_exception_type, stop_after_attempt

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.max_attempts),
            wait=self._wait,
            retry=retry_if_not_exception_type(_Failed),
            reraise=True,
        )
        sent: list[float] = []  # when each attempt at this pair was sent (not every one is)
        last_error: Exception | None = None  # the error of the last attempt sent
        try:
            async for attempt in retrying:
                with attempt:
                    try:
                        judgement = await self._attempt(client, slots, limiter, req, sent)
                    except _NotSent:
                        raise
                    except Exception as exc:
                        last_error = exc
                        raise
        except Exception as exc:  # every failure is counted with its reason, never raised
            self.stats.failures += 1
            if isinstance(exc, _NotSent) and last_error is not None:
                exc = last_error  # sent and failed before the judge was found down: why
            cause = exc.__cause__ if isinstance(exc, _Failed) and exc.__cause__ else exc
            reason = "NotSent" if isinstance(exc, _NotSent) else type(cause).__name__
            self.stats.failure_reasons[reason] += 1
            self.last_failures[req.key] = reason
            return None
        finally:
            # a retry is an attempt sent again: not a wait tenacity asked for (it asks after
            # the last attempt too), nor an attempt the judge's outage kept from being sent
            self.stats.retries += max(0, len(sent) - 1)
        self.cache.put(req.key, judgement)
        self.stats.succeeded += 1
        return judgement

    def _wait(self, state: Any) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hinted = _retry_after(exc) if exc is not None else None
        if hinted is not None:
            return hinted
        return float(min(_BACKOFF_CAP, _BACKOFF_BASE * 2 ** (state.attempt_number - 1)))

    async def _attempt(
        self,
        client: Any,
        slots: asyncio.Semaphore,
        limiter: Any,
        req: JudgeRequest,
        sent_at: list[float],
    ) -> Judgement:
        """One request for ``req`` (its send time appended to ``sent_at``), unless the judge
        is down."""
        import openai

        extra: dict[str, Any] = {} if self.config.seed is None else {"seed": self.config.seed}
        self._raise_if_down()  # before waiting for the rate limit: nothing will be sent
        if limiter is not None:
            await limiter.acquire()
        async with slots:
            self._raise_if_down()
            self.stats.calls += 1
            sent = time.monotonic()
            sent_at.append(sent)
            if self.stats.first_sent is None:
                self.stats.first_sent = sent
            outcome = "error"
            try:
                response = await client.chat.completions.create(
                    model=self.config.model,
                    temperature=self.config.temperature,
                    messages=[
                        {
                            "role": "user",
                            "content": req.rubric.prompt(req.task, req.prediction, req.reference),
                        }
                    ],
                    **extra,
                )
                outcome = "ok"
            except openai.RateLimitError:
                self.stats.rate_limited += 1
                outcome = "rate_limited"
                raise
            except (
                openai.AuthenticationError,
                openai.PermissionDeniedError,
                openai.BadRequestError,
                openai.NotFoundError,
            ) as exc:
                raise _Failed(str(exc)) from exc
            finally:
                answered = time.monotonic()
                self._failing = self._failing + 1 if outcome == "error" else 0
                self.stats.in_flight_seconds += answered - sent
                self.stats.last_answered = answered
                if self.observer is not None:
                    self.observer(answered - sent, outcome)
        text = response.choices[0].message.content or "" if response.choices else ""
        usage = response.usage
        self.stats.tokens_in += getattr(usage, "prompt_tokens", 0) or 0
        self.stats.tokens_out += getattr(usage, "completion_tokens", 0) or 0
        scores = parse_scores(text, req.rubric.codes)  # JudgeAnswerError: retried
        return Judgement(
            scores,
            str(response.model or self.config.model),
            getattr(usage, "prompt_tokens", 0) or 0,
            getattr(usage, "completion_tokens", 0) or 0,
            datetime.now(UTC).isoformat(timespec="seconds"),
        )

    def _raise_if_down(self) -> None:
        if self._failing >= _DOWN_AFTER:
            raise _NotSent(f"the judge's last {self._failing} attempts all failed")

    def effective_concurrency(self) -> float | None:
        """Requests in flight on average, from the first request sent to the last answer."""
        s = self.stats
        if s.first_sent is None or s.last_answered is None or s.last_answered <= s.first_sent:
            return None
        return round(s.in_flight_seconds / (s.last_answered - s.first_sent), 2)

    def provenance(self) -> dict[str, Any]:
        """Who judged, how, and how it went: stored with every judged score."""
        c, s = self.config, self.stats
        prices: tuple[float | None, float | None] = (
            c.price_input_per_mtok,
            c.price_output_per_mtok,
        )
        if None in prices:
            prices = KNOWN_PRICES.get(c.model, (None, None))
        cost = None
        if prices[0] is not None and prices[1] is not None:
            cost = round((s.tokens_in * prices[0] + s.tokens_out * prices[1]) / 1e6, 4)
        reported = s.models_reported.most_common(1)[0][0] if s.models_reported else None
        return {
            "provider": "openai-compatible",
            "model_requested": c.model,
            "model_reported": reported,
            "endpoint": c.endpoint,
            "prompt_version": c.prompt_version,
            "temperature": c.temperature,
            "seed": c.seed,
            "config_id": c.config_id,
            "date": datetime.now(UTC).date().isoformat(),
            "pairs": s.requested,
            "cache_hits": s.cache_hits,
            "calls": s.calls,
            "retries": s.retries,
            "rate_limited": s.rate_limited,
            "failures": s.failures,
            "failure_reasons": dict(s.failure_reasons),
            "success_rate": (s.requested - s.failures) / s.requested if s.requested else None,
            "tokens_in": s.tokens_in,
            "tokens_out": s.tokens_out,
            "wall_seconds": round(s.wall_seconds, 3),
            "concurrency": c.concurrency,
            "effective_concurrency": self.effective_concurrency(),
            "estimated_cost_usd": cost,
        }


def judge_from_settings(
    prompt_version: str = "", model: str | None = None, cache: Path | None = None
) -> Judge:
    """The judge the settings describe, with its SQLite cache; ``prompt_version`` is the
    rubric's version (part of the configuration id).

    Raises:
        UsageError: when OpenAI's own endpoint would be called without an API key.
    """
    from medvidbench.core.config import load_settings
    from medvidbench.core.judge.cache import SQLiteJudgeCache

    settings = load_settings(judge_cache_path=cache)
    config = JudgeConfig.from_settings(settings, model, prompt_version=prompt_version)
    return Judge(config, SQLiteJudgeCache(settings.judge_cache_path))


def judge_from_spec(spec: str, prompt_version: str = "", cache: Path | None = None) -> Judge:
    """The judge a ``MODEL`` or ``MODEL@BASE_URL`` spec names, otherwise as the settings
    describe (key, concurrency, timeout, attempts), with its SQLite cache.

    Raises:
        UsageError: for an empty model name, a base URL that is not http(s), or OpenAI's own
            endpoint without an API key.
    """
    from medvidbench.core.config import load_settings
    from medvidbench.core.judge.cache import SQLiteJudgeCache

    model, _, url = spec.partition("@")
    if not model.strip():
        raise UsageError(f"judge {spec!r}: expected MODEL or MODEL@BASE_URL")
    if url and not url.startswith(("http://", "https://")):
        raise UsageError(f"judge {spec!r}: the base URL must start with http:// or https://")
    settings = load_settings(judge_cache_path=cache)
    if url:
        settings = settings.model_copy(update={"judge_base_url": url})
    config = JudgeConfig.from_settings(settings, model.strip(), prompt_version=prompt_version)
    return Judge(config, SQLiteJudgeCache(settings.judge_cache_path))
