"""One exception hierarchy for the whole package.

Every error knows the HTTP status a web layer should answer with and the exit code a CLI should
end with (:class:`ExitCode`), and carries a message written for the person who caused it: what
was expected, what arrived, and where. User mistakes never surface as tracebacks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """The ``medvidbench`` command's exit codes: a script tells what went wrong, and whether
    trying again later can help, without reading the message (docs/cli.md)."""

    OK = 0
    FAILURE = 1  # an unexpected failure: ours, or the server's (500 and other 5xx)
    USAGE = 2  # a bad option or argument, a missing file, an unknown benchmark or profile
    MODEL_UNAVAILABLE = 3  # a model file the evaluator needs is not installed or is corrupt
    INVALID_FILE = 4  # the prediction file is invalid (or partial, under --require-complete)
    INVALID_GROUND_TRUTH = 5  # the ground-truth or questions file is unusable
    REFUSED = 6  # the server refused for good: 401, 403, 404, 409, 413, 422, a rejected file
    RETRY_LATER = 7  # not now: 429 (quota, rate limit), 502/503/504, no answer at all


class MedVidBenchError(Exception):
    """Base class of every error this package raises on purpose."""

    http_status: int = 500
    exit_code: int = ExitCode.FAILURE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        """The error as a JSON-serialisable object (the API's error shape)."""
        return {"error": type(self).__name__, "message": self.message}


class UsageError(MedVidBenchError):
    """The caller asked for something that cannot be done (bad option, missing file)."""

    http_status = 400
    exit_code = ExitCode.USAGE


class ModelUnavailableError(MedVidBenchError):
    """A model file the evaluator needs is not installed or is corrupt."""

    http_status = 503
    exit_code = ExitCode.MODEL_UNAVAILABLE


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an uploaded or reference file.

    Attributes:
        code: A stable machine-readable identifier, such as ``missing-field``.
        message: The human-readable sentence, including the location.
        record: Zero-based record number in the file, when the problem belongs to one record.
        sample_id: The record's sample id, when known.
        answered_by: For a warning, the scoring option that settles it when the user gives it
            (``coordinates``: the file's boxes look normalised, and the user says how).
    """

    code: str
    message: str
    record: int | None = None
    sample_id: str | None = None
    answered_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "record": self.record,
            "id": self.sample_id,
        }


@dataclass(slots=True)
class ProblemList:
    """An ordered, size-capped collection of problems with exact per-code totals.

    A garbage file of half a million records would otherwise produce half a million messages;
    we keep the first ``keep_per_code`` of each kind and count the rest.
    """

    keep_per_code: int = 50
    items: list[Problem] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    count: int = 0

    def add(self, problem: Problem) -> None:
        seen = self.totals.get(problem.code, 0)
        self.totals[problem.code] = seen + 1
        self.count += 1
        if seen < self.keep_per_code:
            self.items.append(problem)

    def __bool__(self) -> bool:
        return self.count > 0

    def __len__(self) -> int:
        return self.count

    def omitted(self) -> int:
        """How many problems were counted but not kept."""
        return len(self) - len(self.items)

    def without(self, codes: set[str]) -> ProblemList:
        """A copy without the problems of ``codes`` (their totals too)."""
        kept = ProblemList(self.keep_per_code)
        kept.items = [p for p in self.items if p.code not in codes]
        kept.totals = {c: n for c, n in self.totals.items() if c not in codes}
        kept.count = sum(kept.totals.values())
        return kept


class InvalidFileError(MedVidBenchError):
    """A file could not be used; carries every problem found, not just the first."""

    http_status = 422
    exit_code = ExitCode.INVALID_FILE
    what = "file"

    def __init__(self, problems: ProblemList, source: str = "") -> None:
        self.problems = problems
        self.source = source
        where = f" {source!r}" if source else ""
        first = problems.items[0].message if problems.items else "unknown problem"
        more = len(problems) - 1
        tail = f" (and {more} more problem{'s' if more != 1 else ''})" if more > 0 else ""
        super().__init__(f"invalid {self.what}{where}: {first}{tail}")

    def to_dict(self) -> dict[str, Any]:
        body = super().to_dict()
        body["problems"] = [p.to_dict() for p in self.problems.items]
        body["problem_totals"] = dict(self.problems.totals)
        return body


class InvalidSubmissionError(InvalidFileError):
    """An uploaded prediction file is unusable (the submitter's mistake)."""

    what = "submission"


class InvalidGroundTruthError(InvalidFileError):
    """A ground-truth file is unusable (the operator's mistake, never guessed around)."""

    http_status = 500
    exit_code = ExitCode.INVALID_GROUND_TRUTH
    what = "ground truth"


class NotFoundError(MedVidBenchError):
    """The thing asked for does not exist (or is not visible to the caller)."""

    http_status = 404
    exit_code = ExitCode.USAGE


class AuthenticationError(MedVidBenchError):
    """No valid credentials were given."""

    http_status = 401
    exit_code = ExitCode.REFUSED


class AccountGoneError(AuthenticationError):
    """The caller's account was deleted after they signed in: their credentials name nobody
    now, so it is a 401 (sign in again) in every service, never a 403 or a 404."""

    def __init__(self) -> None:
        super().__init__("your account no longer exists")


class PermissionDeniedError(MedVidBenchError):
    """The caller is known but not allowed to do this."""

    http_status = 403
    exit_code = ExitCode.REFUSED


class ConflictError(MedVidBenchError):
    """The request clashes with what is stored (a taken model name, a duplicate file)."""

    http_status = 409
    exit_code = ExitCode.REFUSED


class QuotaExceededError(MedVidBenchError):
    """The team has used its submissions for the period; ``retry_after`` says when one frees."""

    http_status = 429
    exit_code = ExitCode.RETRY_LATER

    def __init__(self, message: str, retry_after: Any = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # a datetime (UTC), or None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.retry_after is not None:
            out["retry_at"] = self.retry_after.isoformat(timespec="seconds")
        return out


class TryLaterError(MedVidBenchError):
    """The server cannot do this now through no fault of the caller (the process that checks
    uploads died, the disk is full); ``retry_after`` (a UTC datetime) says when to try again."""

    http_status = 503
    exit_code = ExitCode.RETRY_LATER

    def __init__(self, message: str, retry_seconds: int, status: int = 503) -> None:
        super().__init__(message)
        self.http_status = status
        self.retry_after = datetime.now(UTC) + timedelta(seconds=retry_seconds)


class DatabaseUnavailableError(TryLaterError):
    """The database cannot be reached (down, restarting, or not answering within the connect
    timeout): nothing can be read or stored now."""

    def __init__(self, retry_seconds: int = 30) -> None:
        super().__init__(
            "The database cannot be reached right now; try again in a minute. "
            "(The server's log says more.)",
            retry_seconds,
        )


class RateLimitedError(MedVidBenchError):
    """Too many attempts of something from one place (sign-ups from one address)."""

    http_status = 429
    exit_code = ExitCode.RETRY_LATER


class NoQueueError(MedVidBenchError):
    """Background work was asked of a process that has no job queue (a wiring mistake of
    ours, not the caller's)."""

    http_status = 500
    exit_code = ExitCode.FAILURE


class NotMigratedError(MedVidBenchError):
    """The database is not at the migration this code needs (a web or worker process refuses
    to start; readiness answers 503)."""

    http_status = 503
    exit_code = ExitCode.USAGE

    def __init__(self, current: str | None, head: str, newer: bool = False) -> None:
        where = "has no schema" if current is None else f"is at revision {current}"
        if newer:  # a later release migrated it: no upgrade of this code's knows the way back
            super().__init__(
                f"the database is at revision {current}, which this version of medvidbench "
                f"does not know (it needs {head}): a later release migrated it. Run that "
                "release, or restore a backup made before that upgrade"
            )
        else:
            super().__init__(
                f"the database {where}, this version of medvidbench needs revision {head}: "
                "run 'medvidbench db upgrade' (with the same settings) before starting it"
            )
        self.current, self.head = current, head


class QueueUnavailableError(TryLaterError):
    """The job queue (Redis) cannot be reached: work cannot be queued now."""

    def __init__(self, message: str, retry_seconds: int = 30) -> None:
        super().__init__(message, retry_seconds)
