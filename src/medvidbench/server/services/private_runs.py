"""How many private runs came before a published row: the "best of N" a reader weighs it by.

A row published after N runs its team (or its submitter, before joining the team too) had
scored on the same benchmark, and that no reader of the boards could see at that moment, says
"after N private runs". Three times decide it, all read from what is stored:

- when the row was published: its last ``published`` event, or its upload when it was public
  from the start (the choice to publish it was made then);
- when each run was scored (``scored_at``): a run still being scored then was not yet a try
  whose result anyone could weigh;
- whether each run was on the boards at that moment, replayed from its events: public (its
  visibility events, ``published``, ``unpublished``, ``withdrawn``, from the visibility it was
  uploaded with), not hidden by an administrator (``hidden``, ``shown``), not failed
  (``failed``, ``rejudge``: a run whose judging failed leaves the boards), not deleted (the
  audit log's ``submission.delete``). A run published later still counts; a run public then
  and withdrawn later does not; a public run hidden, failed or deleted before that moment
  counts; a run deleted since counts as it stood (its row and events are kept). Runs on any
  test set of the benchmark count, an earlier one included: its results were tries at the same
  benchmark.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, or_, select

from medvidbench.server.lifecycle import Status
from medvidbench.server.services.events import Kind
from medvidbench.server.store.db import aware
from medvidbench.server.store.models import AuditLog, Submission, SubmissionEvent, TestSet

# A deletion, read from the audit log (``submission.delete``): not a submission event.
DELETED = "deleted"
# Each visibility event, and the visibility it leaves a submission with.
VISIBILITY_EVENTS: dict[str, str] = {
    Kind.PUBLISHED: "public",
    Kind.UNPUBLISHED: "private",
    Kind.WITHDRAWN: "withdrawn",
}
# The events that take a submission off the boards whatever its visibility, or put it back:
# (the reason it concerns, whether it is off after the event).
OFF_EVENTS: dict[str, tuple[str, bool]] = {
    Kind.HIDDEN: ("hidden", True),
    Kind.SHOWN: ("hidden", False),
    Kind.FAILED: ("failed", True),  # a final failure; of judging, for a scored run
    Kind.REJUDGE: ("failed", False),
    DELETED: ("deleted", True),
}


@dataclass(slots=True)
class _Run:
    id: int
    user_id: int | None  # None once the account is deleted
    team_id: int | None
    created_at: datetime
    scored_at: datetime
    visibility: str  # now
    changes: list[tuple[datetime, str]]  # (when, event kind), oldest first
    deleted: bool = False  # now
    first: str = ""  # the visibility it was uploaded with

    def seen_at(self, moment: datetime) -> bool:
        """Whether it was on the boards at ``moment`` (a change made at that very moment
        included): public, and neither hidden, failed nor deleted."""
        visibility, off = self.first, set()
        for at, kind in self.changes:
            if at > moment:
                break
            if kind in VISIBILITY_EVENTS:
                visibility = VISIBILITY_EVENTS[kind]
            else:
                reason, now_off = OFF_EVENTS[kind]
                if now_off:
                    off.add(reason)
                else:
                    off.discard(reason)
        return visibility == "public" and not off

    def published_at(self) -> datetime:
        """When it was last made public: its last ``published`` event, else its upload."""
        made_public = [at for at, kind in self.changes if kind == Kind.PUBLISHED]
        return made_public[-1] if made_public else self.created_at

    def visibility_changes(self) -> list[str]:
        return [VISIBILITY_EVENTS[kind] for _, kind in self.changes if kind in VISIBILITY_EVENTS]


def counts(
    connection: Connection, shown: list[tuple[int, int | None, int | None]], benchmark_id: int
) -> dict[int, int]:
    """The private runs before each submission ``shown`` on a board of test set
    ``benchmark_id`` was published, by submission id (``shown``: each submission's id, account
    and team, public or not)."""
    if not shown:
        return {}
    users = {user for _, user, _ in shown if user is not None}
    teams = {team for _, _, team in shown if team is not None}
    runs = _runs(connection, benchmark_id, users, teams)
    # A row's runs are its submitter's and its team's: counted as the submitter's, plus the
    # team's, less those counted twice (the submitter's own within the team).
    groups: dict[tuple[Any, ...], _Group] = defaultdict(_Group)
    for run in runs.values():
        if run.user_id is not None:
            groups["user", run.user_id].add(run)
        if run.team_id is not None:
            groups["team", run.team_id].add(run)
            if run.user_id is not None:
                groups["both", run.team_id, run.user_id].add(run)
    out = {}
    for sub_id, user, team in shown:
        row = runs.get(sub_id)
        if row is None:  # on a board but never scored: counts nothing
            out[sub_id] = 0
            continue
        moment = row.published_at()
        total = groups["user", user].before(moment) if user is not None else 0
        if team is not None:
            total += groups["team", team].before(moment)
            if user is not None:
                total -= groups["both", team, user].before(moment)
        # the row itself is never one of its tries (it was off the boards at that moment if
        # published while hidden, say, and counted once above then)
        mine = (user is not None or team is not None) and _unseen(row, moment)
        out[sub_id] = total - mine
    return out


def _unseen(run: _Run, moment: datetime) -> bool:
    """A try no reader of the boards could see at ``moment``: scored before it, not on the
    boards then."""
    return run.scored_at < moment and not run.seen_at(moment)


@dataclass(slots=True)
class _Group:
    """Some runs, ready to count those scored before a moment and not on the boards then."""

    still: list[datetime] = field(default_factory=list)  # scored_at of runs never public
    moved: list[_Run] = field(default_factory=list)  # runs whose visibility changed
    ready: bool = False

    def add(self, run: _Run) -> None:
        if run.first != "public" and all(kind != Kind.PUBLISHED for _, kind in run.changes):
            self.still.append(run.scored_at)  # never on the boards: a try from being scored
        elif run.changes:
            self.moved.append(run)
        # else public from its upload on, never taken off: never a try

    def before(self, moment: datetime) -> int:
        if not self.ready:
            self.still.sort()
            self.ready = True
        return bisect_left(self.still, moment) + sum(_unseen(run, moment) for run in self.moved)


def _runs(
    connection: Connection, benchmark_id: int, users: set[int], teams: set[int]
) -> dict[int, _Run]:
    """Every scored submission of these accounts and teams on the benchmark (any of its test
    sets), with its visibility history."""
    slug = select(TestSet.slug).where(TestSet.id == benchmark_id).scalar_subquery()
    theirs = (
        Submission.benchmark_id.in_(select(TestSet.id).where(TestSet.slug == slug)),
        or_(Submission.user_id.in_(users), Submission.team_id.in_(teams)),
        Submission.scored_at.is_not(None),
    )
    runs = {
        # scored_at: never null here (``theirs``)
        row[0]: _Run(
            row[0],
            row[1],
            row[2],
            aware(row[3]),
            aware(cast(datetime, row[4])),
            row[5],
            [],
            row[6] == Status.DELETED,
        )
        for row in connection.execute(
            select(
                Submission.id,
                Submission.user_id,
                Submission.team_id,
                Submission.created_at,
                Submission.scored_at,
                Submission.visibility,
                Submission.status,
            ).where(*theirs)
        )
    }
    events = (
        select(SubmissionEvent.submission_id, SubmissionEvent.at, SubmissionEvent.kind)
        .join(Submission, Submission.id == SubmissionEvent.submission_id)
        .where(*theirs, SubmissionEvent.kind.in_([*VISIBILITY_EVENTS, *OFF_EVENTS]))
        .order_by(SubmissionEvent.id)
    )
    for sub_id, at, kind in connection.execute(events):
        run = runs.get(sub_id)
        if run is not None:  # else scored between the two reads (PostgreSQL): not counted yet
            run.changes.append((aware(at), kind))
    for run in runs.values():
        run.first = _first(run)
    # withdrawn first: public or private before? the upload's audit record says; and when a
    # deleted run was deleted (a deletion is audited, not a submission event)
    unknown = [run for run in runs.values() if not run.first]
    gone = [run for run in runs.values() if run.deleted]
    if unknown or gone:
        _from_audit(connection, unknown, gone)
    return runs


def _first(run: _Run) -> str:
    """The visibility a run was uploaded with, where its history decides it: each change
    changes it, so the first change leaves the other of public and private. Withdrawn (final)
    may follow either: "" then."""
    changes = run.visibility_changes()
    if not changes:
        return run.visibility
    return {"public": "private", "private": "public"}.get(changes[0], "")


def _from_audit(connection: Connection, unknown: list[_Run], gone: list[_Run]) -> None:
    """From the audit log, in one read: the visibility each ``unknown`` run was uploaded with
    (its upload's record; private when none is found, so the count errs toward more tries,
    never fewer), and when each ``gone`` run was deleted, as a change of its own."""
    first = {f"submission:{run.id}": run for run in unknown}
    deleted = {f"submission:{run.id}": run for run in gone}
    for action, target, at, detail in connection.execute(
        select(AuditLog.action, AuditLog.target, AuditLog.at, AuditLog.detail).where(
            AuditLog.action.in_(("submission.received", "submission.delete")),
            AuditLog.target.in_([*first, *deleted]),
        )
    ):
        if action == "submission.delete" and target in deleted:
            run = deleted[target]
            run.changes.append((aware(at), DELETED))
            run.changes.sort(key=lambda change: change[0])  # stable: events keep their order
        elif action == "submission.received" and target in first:
            given = (detail or {}).get("visibility")
            if given in ("public", "private"):
                first[target].first = given
    for run in unknown:
        run.first = run.first or "private"
