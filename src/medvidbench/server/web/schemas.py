"""API shapes (the request and response bodies of ``/api/v1``).

Each route declares one of these as its response model, so ``/openapi.json`` describes what it
returns. The bodies are the ones earlier versions sent: numbers are ``int | float`` where a
stored value may be either, so that a whole number is never re-written as ``1.0``, and the
open-ended parts (per-task details, judge provenance, statistics) are objects whose keys
depend on the benchmark.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from types import GenericAlias, UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, Field, create_model

from medvidbench.server.services.boards import BoardRow

Number = int | float
Json = dict[str, Any]


class ProblemOut(BaseModel):
    """One problem of an invalid file (code, message, record number, item id) or of an invalid
    request (``where``: the parameter, and the message)."""

    message: str
    code: str | None = None
    record: int | None = None
    id: str | None = None
    where: str | None = None


class ErrorBody(BaseModel):
    """Every refusal of ``/api/v1``, whatever its status: the error's kind and a one-line
    message; an invalid file or request adds every problem found (with totals per code for a
    file), a refusal for now adds when to try again (``retry_at``, with a ``Retry-After``
    header)."""

    error: str
    message: str
    problems: list[ProblemOut] | None = None
    problem_totals: dict[str, int] | None = None
    retry_at: str | None = None


# Declared on every route of the API: the statuses it may answer with this body.
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": about}
    for status, about in (
        (400, "a bad request (a parameter out of range, a model name too long)"),
        (401, "no API token, or one that is invalid or revoked"),
        (403, "not allowed to the caller"),
        (404, "no such benchmark, submission or entry (or not visible to the caller)"),
        (409, "a conflict (a taken model name, a file submitted already)"),
        (413, "a file or body over the size limit"),
        (422, "an invalid file or request: every problem, located"),
        (429, "the quota or a rate limit is used up: retry_at says when"),
        (503, "busy or the database is unreachable: try again (Retry-After)"),
    )
}


class SubmissionCreated(BaseModel):
    """An accepted upload: where to follow it, who sees it, and what validation warned about."""

    id: int
    status: str
    url: str
    visibility: str = "public"
    warnings: list[str] = []
    note: str | None = Field(
        None, description="Set when scoring waits: the job queue was down (it starts once back)."
    )


class JudgeSummary(BaseModel):
    """Whether this server judges captions, and with which model (never the key)."""

    enabled: bool
    endpoint: str | None
    model: str | None
    reason: str | None


class Live(BaseModel):
    """The process answers."""

    status: str
    version: str


class Ready(BaseModel):
    """Whether the process can work now: each part (database, queue) ``ok`` or what is wrong."""

    status: str
    failing: list[str]
    checks: dict[str, str]


class Health(BaseModel):
    """Liveness, and the default benchmark's current test set (null before one is loaded)."""

    status: str
    version: str
    benchmark: str | None
    samples: int | None
    demo: bool | None
    benchmarks: list[str]
    judge: JudgeSummary


class BenchmarkBase(BaseModel):
    """What every description of a hosted benchmark starts with: the definition, then its
    current test set (null fields: none is loaded)."""

    slug: str
    title: str
    version: str
    scorer_version: str
    labels: str
    url: str
    api: str
    id: int | None
    name: str | None
    sha256: str | None
    samples: int | None


class BenchmarkSummary(BenchmarkBase):
    """A hosted benchmark and its current test set (null fields: none is loaded)."""

    tasks: dict[str, int] | None
    demo: bool | None


class MetricTable(BaseModel):
    """The metrics (with their group), tasks and profiles a benchmark's definition declares."""

    benchmark: str
    scorer_version: str
    metrics: list[Json]
    tasks: list[Json]
    profiles: list[Json]


class BenchmarkDetail(BenchmarkBase):
    """One benchmark: its summary (``tasks`` here are the definition's tasks, not the test
    set's counts), its About text and provenance, and its metric table."""

    tasks: list[Json]
    demo: bool | None
    about: str
    identity: str
    citation: str
    links: dict[str, str]
    licence: str
    benchmark: str
    metrics: list[Json]
    profiles: list[Json]


def _loose(kind: Any) -> Any:
    """``kind`` with every ``float`` read as ``int | float`` (a whole number stays whole)."""
    if kind is float:
        return Number
    args = get_args(kind)
    if not args:
        return kind
    loose = tuple(_loose(a) for a in args)
    if get_origin(kind) in (Union, UnionType):
        return functools.reduce(operator.or_, loose)
    return get_origin(kind)[loose]


def _row_model(name: str, doc: str, before: dict[str, Any], after: dict[str, Any]) -> Any:
    """A response model with a board row's fields (read from :class:`BoardRow`, so the two
    cannot drift apart), ``before`` them and ``after`` them."""
    hints = get_type_hints(BoardRow)
    fields: dict[str, Any] = dict(before)
    for f in dataclasses.fields(BoardRow):
        kind = _loose(hints[f.name])
        if f.default is not dataclasses.MISSING:
            fields[f.name] = (kind, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            fields[f.name] = (kind, f.default_factory())
        else:
            fields[f.name] = (kind, ...)
    fields.update(after)
    return create_model(name, __doc__=doc, **fields)


# Built from BoardRow's fields at import: values for ``response_model``, not types to annotate.
BoardRowPublic = _row_model("BoardRowPublic", "One ranked row of a board.", {}, {})
BoardEntry = _row_model(
    "BoardEntry", "One board entry and the board it is on.", {"board": (str, ...)}, {}
)
ComparedEntry = _row_model(
    "ComparedEntry",
    "A compared entry: its row, and each metric on 0-1 with 1 the best.",
    {},
    {"normalised": (dict[str, Number | None], ...)},
)


class MetricDifference(BaseModel):
    """One metric of an entry minus the reference entry, with its paired 95 % interval."""

    difference: Number | None
    interval: list[Number] | None
    distinguishable: bool | None
    identical: bool  # the same on every resample: no interval, and no evidence of any lead


class EntryDifferences(BaseModel):
    """An entry against the first one compared (``note`` says why when they cannot be
    paired)."""

    reference: str
    other: str
    note: str
    metrics: dict[str, MetricDifference]


_COMPARISON: dict[str, Any] = {
    "benchmark": (str, ...),
    "metrics": (list[str], ...),
    "columns": (dict[str, str], ...),
    "entries": (GenericAlias(list, (ComparedEntry,)), ...),  # list[ComparedEntry]
    "differences": (list[EntryDifferences], ...),
}
Comparison = create_model(
    "Comparison",
    __doc__="Two to four entries side by side, and each after the first minus the first.",
    **_COMPARISON,
)


class QuotaWindowPublic(BaseModel):
    """One rolling quota window (a limit of 0: no limit)."""

    period: str
    limit: int
    used: int
    remaining: int
    resets_at: str | None


class Quota(BaseModel):
    """Your (and your team's) submissions left on a benchmark, per rolling window."""

    benchmark: str
    windows: list[QuotaWindowPublic]


class SubmissionListed(BaseModel):
    """One of your submissions, in the list of them."""

    id: int
    model_name: str
    status: str
    created_at: str
    error: str | None


class VisibilityChanged(BaseModel):
    """A submission's new visibility."""

    id: int
    visibility: str


class TimelineStep(BaseModel):
    state: str
    reached: bool


class EvaluationListed(BaseModel):
    """One stored evaluation of a submission (re-scores included); ``on_boards``: the one the
    boards use, ``shown``: the one this answer shows."""

    id: int
    profile: str
    scorer_version: str
    judge: str | None
    judge_id: str | None
    at: str
    on_boards: bool
    shown: bool


class LogLine(BaseModel):
    """One step of a submission's log (error texts for its submitter and staff only)."""

    at: str
    kind: str
    message: str


class SubmissionPublic(BaseModel):
    """A submission's state, scores, evaluations, warnings and log."""

    id: int
    benchmark: str
    model_name: str
    model_url: str | None
    team: str
    status: str
    shown_status: str
    timeline: list[TimelineStep]
    final: bool
    judge_on: bool
    judge_failed: bool
    judged: bool
    created_at: str
    verdict: str
    missing_tasks: list[str]
    records: int
    error: str | None
    settings: Json
    evaluation_id: int | None
    metrics: dict[str, Number | None] | None
    per_task: Json
    per_dataset: Json
    judge: Json | None
    profile: str | None
    scorer_version: str | None
    statistics: Json | None
    evaluations: list[EvaluationListed]
    hidden: bool
    visibility: str
    would_rank: tuple[int, int] | None
    warnings: list[str] | None
    log: list[LogLine]
    owner: bool


class ConsensusRow(BaseModel):
    """One model's place under one aggregation across benchmarks (aggregates only)."""

    method: str
    about: str
    replicates: int
    note: str
    rank: int
    model: str
    score: Number | None
    interval: list[int] | None
    benchmarks: int
