"""Background jobs on Huey: SQLite storage embedded, Redis storage for many workers.

Tasks are registered on an explicit :class:`Jobs` object (no import-time queue), which is the
runtime's :class:`~medvidbench.server.runtime.Queue`: services enqueue through the runtime and
never import this module, an adapter on top of them like the web and the CLI. The web process
and every ``medvidbench worker`` build the same one. Jobs only call
:mod:`medvidbench.server.services.steps`, whose atomic claims make duplicate deliveries
harmless; a periodic reaper re-enqueues submissions that wait too long or whose worker died.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from medvidbench.core.config import Settings
from medvidbench.core.errors import QueueUnavailableError, UsageError
from medvidbench.server.logs import job_context
from medvidbench.server.metrics import instruments
from medvidbench.server.outages import Outages, describe, is_queue_outage
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.evaluations import lost_rescores, rescore
from medvidbench.server.services.housekeeping import tidy
from medvidbench.server.services.steps import (
    configured_judge,
    judge_due,
    retry_delay,
    run_step,
    stale,
    step_attempts,
)
from medvidbench.server.services.submission_reads import benchmark_of

log = logging.getLogger("medvidbench.server.jobs")


class Guarded:
    """Mixed into a Huey class: its consumer backs off while the queue or the database is down
    (one log line per back-off, see :mod:`medvidbench.server.outages`) instead of logging a
    traceback on every read of the queue."""

    outages: Outages

    def dequeue(self) -> Any:
        wait = self.outages.pause()
        if wait:  # short naps: a consumer told to stop notices within a second
            time.sleep(min(wait, 1.0))
            return None
        try:
            task = super().dequeue()  # type: ignore[misc]
        except Exception as exc:
            if not self.outages.failed(exc):
                raise
            return None
        self.outages.queue.recovered()
        return task

    def read_schedule(self, timestamp: Any = None) -> list[Any]:
        if self.outages.queue.pause():
            return []
        try:
            found: list[Any] = super().read_schedule(timestamp)  # type: ignore[misc]
        except Exception as exc:
            if not self.outages.failed(exc):
                raise
            return []
        self.outages.queue.recovered()
        return found

    def read_periodic(self, timestamp: Any) -> list[Any]:
        # the reaper waits for the queue: its work could not be queued anyway
        due: list[Any] = [] if self.outages.queue.pause() else super().read_periodic(timestamp)  # type: ignore[misc]
        return due


def make_huey(settings: Settings, immediate: bool = False) -> Any:
    """The queue: in-memory and synchronous (tests), Redis (``redis://``) or a SQLite file."""
    from huey import MemoryHuey, RedisHuey, SqliteHuey

    def guarded(kind: type, *args: Any, **kwargs: Any) -> Any:
        huey = type(f"Guarded{kind.__name__}", (Guarded, kind), {})(*args, **kwargs)
        huey.outages = Outages()
        return huey

    if immediate:
        return guarded(MemoryHuey, "medvidbench", immediate=True, results=False)
    url = settings.queue_url
    if url and url.startswith(("redis://", "rediss://", "unix://")):
        from redis import ConnectionPool

        # Timeouts: an unreachable Redis is an error in seconds, never a hung request or worker
        # (above the 1 s of the workers' blocking reads).
        pool = ConnectionPool.from_url(url, socket_connect_timeout=5, socket_timeout=15)
        return guarded(RedisHuey, "medvidbench", connection_pool=pool, results=False)
    if url:
        raise ValueError("MEDVIDBENCH_QUEUE_URL must be a redis:// URL (or unset for SQLite)")
    from medvidbench.server.runtime import private_dir, private_file

    private_dir(settings.data_dir)
    queue = (settings.data_dir / "queue.sqlite3").resolve()
    private_file(queue)
    return guarded(SqliteHuey, "medvidbench", filename=str(queue), results=False)


def worker_id() -> str:
    """Unique per job run: host, process, thread and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:6]}"


class Jobs:
    """The queue's tasks, bound to one runtime."""

    def __init__(self, runtime: Runtime, huey: Any) -> None:
        from huey import crontab

        self.runtime, self.huey = runtime, huey
        self._slugs: dict[int, str] = {}
        self.score = huey.task(name="score")(self._score)
        self.judge = huey.task(name="judge")(self._judge)
        self.rescore = huey.task(name="rescore")(self._rescore)
        self.reap = huey.periodic_task(crontab(minute="*"), name="reap")(self._reap)

    # --- the runtime's Queue protocol ----------------------------------------------------------

    def enqueue_score(self, submission_id: int) -> None:
        self._put(self.score, submission_id)

    def enqueue_judge(self, submission_id: int) -> None:
        self._put(self.judge, submission_id)

    def enqueue_rescore(self, submission_id: int, profile: str) -> None:
        self._put(self.rescore, submission_id, profile)

    def _put(self, task: Any, *args: Any) -> None:
        try:
            task(*args)
        except Exception as exc:
            if self.huey.immediate or not is_queue_outage(exc):
                raise  # run at once (tests): the job's own error
            log.warning("could not queue %s%s: %s", task.name, args, describe(exc))
            raise QueueUnavailableError(
                "the job queue cannot be reached; try again in a minute"
            ) from exc

    def check(self) -> None:
        """Raise :class:`QueueUnavailableError` unless the queue answers now."""
        try:
            self.huey.storage.queue_size()
        except Exception as exc:
            if not is_queue_outage(exc):
                raise
            raise QueueUnavailableError(
                f"the job queue cannot be reached ({describe(exc)})"
            ) from exc

    def depth(self) -> dict[str, int]:
        """Jobs waiting: ``pending`` (ready to run) and ``scheduled`` (retries, later)."""
        return {
            "pending": int(self.huey.pending_count()),
            "scheduled": int(self.huey.scheduled_count()),
        }

    def _retry(self, task: Any, submission_id: int, outcome: str) -> None:
        """Schedule the next attempt of a step that failed, later after every failure."""
        if outcome == "retry":
            delay = retry_delay(step_attempts(self.runtime, submission_id))
            task.schedule((submission_id,), delay=delay)

    @contextlib.contextmanager
    def _observed(self, job: str, submission_id: int) -> Iterator[dict[str, str]]:
        """Run a job with its log lines naming the submission and its benchmark, and its
        duration observed by outcome (``error`` when it raised)."""
        try:
            slug = self.benchmark_of(submission_id)
        except Exception:  # gone, or the database is down: the step itself says which
            slug = ""
        result = {"outcome": "error"}
        started = time.perf_counter()
        with job_context(job, submission_id, slug):
            log.info("%s step of submission %s started", job, submission_id)
            try:
                yield result
            finally:
                seconds = time.perf_counter() - started
                instruments().job_seconds.labels(job, slug, result["outcome"]).observe(seconds)
                log.info(
                    "%s step of submission %s: %s in %.2f s",
                    job,
                    submission_id,
                    result["outcome"],
                    seconds,
                )

    def benchmark_of(self, submission_id: int) -> str:
        """The slug of a submission's benchmark (it never changes: remembered)."""
        slug = self._slugs.get(submission_id)
        if slug is None:
            slug = self._slugs[submission_id] = benchmark_of(self.runtime, submission_id)
            if len(self._slugs) > 10_000:
                self._slugs.clear()
        return slug

    def _score(self, submission_id: int, infra_attempt: int = 0) -> str:
        with self._observed("score", submission_id) as result:
            result["outcome"] = self._score_step(submission_id, infra_attempt)
            return result["outcome"]

    def _score_step(self, submission_id: int, infra_attempt: int) -> str:
        try:
            outcome = run_step(self.runtime, submission_id, "score", worker_id())
            self.huey.outages.database.recovered()
        except Exception as exc:  # the database or file store is unreachable: try again later
            self._later(
                self.score, submission_id, infra_attempt, self.runtime.settings.job_lease_seconds
            )
            if self.huey.outages.failed(exc):
                return "later"  # one line per back-off, not a traceback per job
            raise
        try:
            if outcome == "done" and judge_due(self.runtime, submission_id):
                self.judge(submission_id)
            self._retry(self.score, submission_id, outcome)
        except Exception as exc:  # the reaper queues what could not be queued here
            if not self.huey.outages.failed(exc):
                raise
        return outcome

    def _judge(self, submission_id: int, infra_attempt: int = 0) -> str:
        with self._observed("judge", submission_id) as result:
            result["outcome"] = self._judge_step(submission_id, infra_attempt)
            return result["outcome"]

    def _judge_step(self, submission_id: int, infra_attempt: int) -> str:
        try:
            slug = self.benchmark_of(submission_id)
        except Exception as exc:
            if not self.huey.outages.failed(exc):
                raise  # not an outage (a submission deleted since): no retry
            self._later(  # the database is unreachable: try again later, as below
                self.judge, submission_id, infra_attempt, self.runtime.settings.job_lease_seconds
            )
            return "later"
        metrics = instruments()
        try:
            judge = configured_judge(self.runtime, slug, observer=metrics.judge_observer)
        except UsageError as exc:  # a configuration mistake, not a passing fault: no retry
            log.error("judge job for submission %s not run: %s", submission_id, exc.message)
            return "misconfigured"
        try:
            try:
                outcome = run_step(self.runtime, submission_id, "judge", worker_id(), judge=judge)
            finally:
                metrics.judge_cache_hits.inc(judge.stats.cache_hits)
                metrics.judge_failures.inc(judge.stats.failures)
            self.huey.outages.database.recovered()
        except Exception as exc:
            self._later(
                self.judge, submission_id, infra_attempt, self.runtime.settings.job_lease_seconds
            )
            if self.huey.outages.failed(exc):
                return "later"
            raise
        try:
            self._retry(self.judge, submission_id, outcome)
        except Exception as exc:
            if not self.huey.outages.failed(exc):
                raise
        return outcome

    def _later(self, task: Any, submission_id: int, infra_attempt: int, lease: int) -> None:
        """Re-run a job that hit an infrastructure error once its own lease has expired (so the
        claim can be taken again), backing off, at most ``job_max_attempts`` times; claims make
        a duplicate harmless, and the reaper is the backstop once the database is back."""
        if infra_attempt + 1 >= self.runtime.settings.job_max_attempts:
            return
        delay = lease + retry_delay(infra_attempt + 1)
        with contextlib.suppress(Exception):  # the queue itself is down: the reaper re-enqueues
            task.schedule((submission_id, infra_attempt + 1), delay=delay)

    def _rescore(self, submission_id: int, profile: str) -> bool:
        with self._observed("rescore", submission_id) as result:
            added = rescore(self.runtime, submission_id, profile)
            result["outcome"] = "done" if added else "skipped"
            return added

    def _reap(self) -> int:
        try:
            found = stale(self.runtime)
            for submission_id, step in found:
                (self.score if step == "score" else self.judge)(submission_id)
            lost = lost_rescores(self.runtime)
            for submission_id, profile in lost:
                self.rescore(submission_id, profile)
            tidy(self.runtime)  # expired sessions, this machine's crash leftovers
        except Exception as exc:  # the next reap, a minute later, tries again
            if not self.huey.outages.failed(exc):
                raise
            return 0
        self.huey.outages.database.recovered()
        return len(found) + len(lost)


def attach_queue(runtime: Runtime, immediate: bool = False) -> Jobs:
    """Give the runtime its queue (once per process)."""
    jobs = Jobs(runtime, make_huey(runtime.settings, immediate))
    runtime.queue = jobs
    return jobs


def start_embedded_consumer(runtime: Runtime, workers: int = 2) -> Any:
    """Consume jobs on threads of this process (the embedded default of ``serve``).

    Returns the consumer; call ``.stop(graceful=True)`` to stop it. Signals stay with the host
    process (the web server), so the consumer does not install handlers of its own.
    """
    from huey.consumer import Consumer

    class EmbeddedConsumer(Consumer):  # type: ignore[misc]
        def _set_signal_handlers(self) -> None:
            pass

    jobs = runtime.queue if isinstance(runtime.queue, Jobs) else attach_queue(runtime)
    jobs.reap.call_local()
    # An idle worker polls the queue less and less often (huey: up to every 10 s), so a job
    # enqueued after a quiet spell waited up to that long; here, in the web process, a poll of
    # the local queue file every 0.1 s at most costs nothing that matters.
    consumer = EmbeddedConsumer(
        jobs.huey, workers=workers, worker_type="thread", periodic=True, max_delay=0.1
    )
    consumer.start()
    return consumer


def wait_for_database(runtime: Runtime) -> str:
    """Wait (backing off, one line per try) until the database answers; then its revision.

    Raises:
        NotMigratedError: it answers, but is not at this code's migration (a worker refuses to
            start: 'medvidbench db upgrade' first).
    """
    from medvidbench.server.outages import Backoff, is_database_outage
    from medvidbench.server.store.db import check_migrated

    backoff = Backoff("the database")
    while True:
        try:
            revision = check_migrated(runtime.engine)
        except Exception as exc:
            if not is_database_outage(exc):
                raise
            backoff.failed(exc)
            time.sleep(backoff.pause())
            continue
        backoff.recovered()
        return revision


def run_worker(runtime: Runtime, workers: int = 2) -> None:
    """Consume jobs until stopped (SIGINT/SIGTERM); take over abandoned work first."""
    jobs = attach_queue(runtime)
    jobs.reap.call_local()
    consumer = jobs.huey.create_consumer(workers=workers, worker_type="thread", periodic=True)
    consumer.run()
