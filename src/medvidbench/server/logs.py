"""Log lines of ``serve`` and ``worker``: plain text or one JSON object a line.

Every line written while a job runs carries the submission's id and benchmark, in both
formats: the job's own lines through :func:`job_context`, and the queue library's lines
(which name only its task ids) through :class:`JobFields`, which reads the submission id from
the task's arguments and remembers it for the rest of that task's lines on the same thread.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from medvidbench.core.config import Settings

# The jobs whose first argument is a submission id.
SUBMISSION_JOBS = frozenset({"score", "judge", "rescore"})
_job: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "medvidbench_job", default=None
)


@contextmanager
def job_context(job: str, submission_id: int, benchmark: str) -> Iterator[None]:
    """Every line logged inside carries the job, the submission id and its benchmark."""
    token = _job.set({"job": job, "submission_id": submission_id, "benchmark": benchmark})
    try:
        yield
    finally:
        _job.reset(token)


class JobFields(logging.Filter):
    """Adds ``job``, ``submission_id`` and ``benchmark`` to a record logged during a job.

    ``benchmark_of`` names a submission's benchmark (the queue's lines know only its id); it
    is asked once per task run, and a failure to ask leaves the benchmark empty.
    """

    def __init__(self, benchmark_of: Callable[[int], str] | None = None) -> None:
        super().__init__()
        self.benchmark_of = benchmark_of
        self._current = threading.local()
        self._known: dict[int, str] = {}

    def _from_task(self, task: Any) -> dict[str, Any] | None:
        name = str(getattr(task, "name", ""))
        args = getattr(task, "args", None) or ()
        if name not in SUBMISSION_JOBS or not args or not isinstance(args[0], int):
            return None
        benchmark = self._known.get(args[0], "")
        if not benchmark and self.benchmark_of is not None:
            try:
                benchmark = self.benchmark_of(args[0])
            except Exception:  # the database is down: the line still names the submission
                benchmark = ""
            if len(self._known) > 10_000:
                self._known.clear()
            self._known[args[0]] = benchmark  # a submission's benchmark never changes
        return {"job": name, "submission_id": args[0], "benchmark": benchmark, "id": task.id}

    def _fields(self, record: logging.LogRecord) -> dict[str, Any] | None:
        found = _job.get()
        if found is not None:
            return found
        args = record.args if isinstance(record.args, tuple) else ()
        for arg in args:
            if hasattr(arg, "args") and hasattr(arg, "name") and hasattr(arg, "id"):
                fields = self._from_task(arg)
                # A new task on this thread: its lines follow, until the next one starts.
                self._current.fields = fields
                return fields
        current: dict[str, Any] | None = getattr(self._current, "fields", None)
        if current is not None and record.name.startswith("huey") and current["id"] in args:
            return current
        return None

    def filter(self, record: logging.LogRecord) -> bool:
        fields = self._fields(record)
        if fields is not None:
            record.job = fields["job"]
            record.submission_id = fields["submission_id"]
            record.benchmark = fields["benchmark"]
        return True


class TextFormat(logging.Formatter):
    """``time level logger message [submission N, benchmark B, job J]``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        submission = getattr(record, "submission_id", None)
        if submission is not None:
            line += (
                f" [submission {submission}, benchmark "
                f"{getattr(record, 'benchmark', '') or '?'}, job {getattr(record, 'job', '')}]"
            )
        return line


class JsonFormat(logging.Formatter):
    """One JSON object a line: time, level, logger, message, the job's fields, the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("submission_id", "benchmark", "job"):
            value = getattr(record, key, None)
            if value is not None:
                out[key] = value
        if record.exc_info:
            out["traceback"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure_logging(
    settings: Settings, benchmark_of: Callable[[int], str] | None = None, level: int = logging.INFO
) -> logging.Handler:
    """Send every log line to standard error in the configured format (replacing earlier
    handlers of the root logger); returns the handler."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormat() if settings.log_format == "json" else TextFormat())
    handler.addFilter(JobFields(benchmark_of))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # uvicorn's loggers (under plain uvicorn, configured before the app) write through it too,
    # at the same level (uvicorn sets its access log to INFO: a line per request otherwise).
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
        logger.setLevel(level)
    return handler
