"""Prometheus metrics: the process's instruments and the text a scrape of ``/metrics`` gets.

The instruments (job durations, judge requests, HTTP latency) are made once per process, on
first use, never at import. With ``PROMETHEUS_MULTIPROC_DIR`` set (before the process first
imports ``prometheus_client``), every process writes its values to files in that folder and a
scrape of any of them adds up all of them: several web processes and the ``medvidbench worker``
processes of one machine share one folder. Without it, a scrape reports this process alone
(``serve`` with its embedded job threads). What the database knows (submissions by state and
benchmark) and the queue's depth are read at scrape time, not counted.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from medvidbench.server.runtime import Runtime, private_dir

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Seconds: from a fast rule-based step to a long judged one.
JOB_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
JUDGE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


def prepare_multiprocess_dir() -> Path | None:
    """Make ``PROMETHEUS_MULTIPROC_DIR`` usable (a private folder, created when missing)
    before ``prometheus_client`` is imported; None when it is unset (one process alone)."""
    value = os.environ.get(MULTIPROC_ENV) or os.environ.get(MULTIPROC_ENV.lower())
    if not value:
        return None
    folder = Path(value)
    private_dir(folder)
    return folder


class Instruments:
    """The metrics this process observes."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        # Single-process mode scrapes this registry; multiprocess mode reads the files instead.
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.job_seconds = Histogram(
            "medvidbench_job_duration_seconds",
            "Time a background job took, by its step (score, judge, rescore) and outcome.",
            ["step", "benchmark", "outcome"],
            buckets=JOB_BUCKETS,
            registry=reg,
        )
        self.judge_requests = Counter(
            "medvidbench_judge_requests",
            "Requests sent to the judge endpoint, by outcome (ok, error, rate_limited).",
            ["outcome"],
            registry=reg,
        )
        self.judge_seconds = Histogram(
            "medvidbench_judge_request_duration_seconds",
            "Time one judge request took.",
            buckets=JUDGE_BUCKETS,
            registry=reg,
        )
        self.judge_cache_hits = Counter(
            "medvidbench_judge_cache_hits",
            "Judgements found in the judge cache instead of requested.",
            registry=reg,
        )
        self.judge_failures = Counter(
            "medvidbench_judge_failures",
            "Judgements that failed after every attempt.",
            registry=reg,
        )
        self.http_seconds = Histogram(
            "medvidbench_http_request_duration_seconds",
            "Time to answer an HTTP request, by method, route template and status class.",
            ["method", "route", "status"],
            buckets=HTTP_BUCKETS,
            registry=reg,
        )

    def judge_observer(self, seconds: float, outcome: str) -> None:
        """The judge client's per-request callback."""
        self.judge_requests.labels(outcome).inc()
        self.judge_seconds.observe(seconds)


@cache
def instruments() -> Instruments:
    """This process's instruments, made on first use."""
    return Instruments()


class DatabaseCollector:
    """Submissions by state and benchmark, and the queue's depth, read at scrape time."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        from medvidbench.server.services.monitoring import submission_counts

        family = GaugeMetricFamily(
            "medvidbench_submissions",
            "Submissions in the database, by benchmark and state.",
            labels=["benchmark", "status"],
        )
        for (slug, status), n in sorted(submission_counts(self.runtime).items()):
            family.add_metric([slug, status], n)
        yield family
        depth = queue_depth(self.runtime)
        if depth is not None:
            queued = GaugeMetricFamily(
                "medvidbench_queue_depth",
                "Jobs waiting in the queue (pending: ready to run; scheduled: retries later).",
                labels=["state"],
            )
            for state, n in depth.items():
                queued.add_metric([state], n)
            yield queued


def queue_depth(runtime: Runtime) -> dict[str, int] | None:
    """The runtime's queue's jobs by state (None: a queue that cannot tell, or is down)."""
    try:
        return runtime.queue.depth()
    except Exception:  # the queue is down: the scrape still reports the rest
        return None


def instruments_exposition() -> bytes:
    """The instruments of every process sharing this one's ``PROMETHEUS_MULTIPROC_DIR`` (or
    this process's alone), in the text format: what a worker's own listener serves."""
    from prometheus_client import CollectorRegistry, generate_latest

    if os.environ.get(MULTIPROC_ENV) or os.environ.get(MULTIPROC_ENV.lower()):
        from prometheus_client import multiprocess

        registry = CollectorRegistry(auto_describe=True)
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest(instruments().registry)


def exposition(runtime: Runtime) -> tuple[bytes, str]:
    """The body and content type of a scrape: every process's instruments (or this one's),
    then what the database and the queue say now."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    body = instruments_exposition()
    registry = CollectorRegistry(auto_describe=True)
    registry.register(DatabaseCollector(runtime))
    return body + generate_latest(registry), CONTENT_TYPE_LATEST


def scrape_allowed(runtime: Runtime, address: str | None, authorization: str | None) -> bool | None:
    """Whether a scrape may see the metrics: None when /metrics is not configured at all
    (it is then not found), else whether the bearer token or the address is allowed."""
    import hmac

    settings = runtime.settings
    allow = [a.strip() for a in settings.metrics_allow.split(",") if a.strip()]
    if settings.metrics_token is None and not allow:
        return None
    if settings.metrics_token is not None and authorization:
        scheme, _, given = authorization.partition(" ")
        expected = settings.metrics_token.get_secret_value()
        if (
            scheme.lower() == "bearer"
            and expected
            and hmac.compare_digest(given.strip().encode(), expected.encode())
        ):
            return True
    if address and allow:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in ipaddress.ip_network(net, strict=False) for net in allow)
    return False
