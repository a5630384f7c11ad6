"""How many private runs came before a published row: its team's, and its submitter's own,
including those from before the submitter joined the team."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Connection, select, update

from medvidbench.server.lifecycle import Status
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import events
from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.catalogue import load_benchmark
from medvidbench.server.services.private_runs import counts
from medvidbench.server.services.submissions import delete_submission, submit
from medvidbench.server.services.visibility import set_hidden, set_visibility
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import Submission, User
from tests.server.conftest import build_runtime, make_user, variants


def test_a_members_runs_from_before_joining_the_team_count(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    rt = build_runtime(tmp_path, None, synthetic["ground_truth"], quota_per_day=0)
    try:
        erin = make_user(rt, "erin", team=None)
        bob = make_user(rt, "bob", team="Team A")
        files = variants(synthetic["weak"], 6)
        for i in range(3):  # on her own
            submit(rt, erin, files[i], f"Erin try {i}", visibility="private")
        submit(rt, bob, files[3], "Bob try", visibility="private")  # the team's
        submit(rt, make_user(rt, "carl", team=None), files[4], "Carl try", visibility="private")
        with transaction(rt.sessions) as session:  # erin joins bob's team
            joined = session.get(User, erin.id)
            assert joined is not None
            joined.team_id = bob.team_id
        submit(rt, erin, files[5], "Erin public")
        row = next(r for r in board_rows(rt, "community") if r.model_name == "Erin public")
        assert row.private_runs == 4  # her three and the team's one; not carl's
    finally:
        rt.engine.dispose()


def test_the_count_replays_each_runs_visibility_at_the_moment_of_publishing(
    runtime: Runtime, tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    """A row published after a run of private tries counts every try scored before it was
    published (not before it was uploaded), each as it stood then: a try published later
    counts, one public then and withdrawn later does not, a deleted one and one on an earlier
    test set of the benchmark count; a try scored after publishing does not."""
    ann = make_user(runtime, "ann", team=None)
    files = variants(synthetic["weak"], 7)
    submit(runtime, ann, files[0], "Old test set try", visibility="private")
    # a new test set of the benchmark: the same items, in another file
    again = tmp_path / "ground_truth_v2.json"
    again.write_text(json.dumps(json.loads(synthetic["ground_truth"].read_text()), indent=1))
    load_benchmark(runtime, again)
    chosen = submit(runtime, ann, files[1], "Chosen", visibility="private")
    later = submit(runtime, ann, files[2], "Published later", visibility="private")
    gone = submit(runtime, ann, files[3], "Deleted try", visibility="private")
    delete_submission(runtime, ann, gone.id)
    quiet = submit(runtime, ann, files[4], "Withdrawn, private", visibility="private")
    shown = submit(runtime, ann, files[5], "Public then")
    set_visibility(runtime, ann, chosen.id, "public")
    set_visibility(runtime, ann, later.id, "public")
    set_visibility(runtime, ann, shown.id, "withdrawn")
    set_visibility(runtime, ann, quiet.id, "withdrawn")
    submit(runtime, ann, files[6], "Scored after", visibility="private")
    rows = {r.model_name: r for r in board_rows(runtime, "community")}
    assert set(rows) == {"Chosen", "Published later"}
    # the old test set's try, the one published later, the deleted one, the one withdrawn
    # from private; not the one public then, nor the one scored after
    assert rows["Chosen"].private_runs == 4
    # the same but "Chosen", public by then
    assert rows["Published later"].private_runs == 3


def test_a_run_scored_between_the_counts_two_reads_breaks_nothing(
    runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    """The count reads the runs, then their visibility events. On PostgreSQL each read sees
    what was committed before it began, so a run scored in between has events but was not read
    as a run: this read leaves it out (the next one reads it whole), never a KeyError."""
    ann = make_user(runtime, "ann", team=None)
    files = variants(synthetic["weak"], 3)
    submit(runtime, ann, files[0], "Try", visibility="private")
    shown = submit(runtime, ann, files[1], "Shown")
    late = submit(runtime, ann, files[2], "Late", visibility="private")
    set_visibility(runtime, ann, late.id, "public")  # events of its own
    set_visibility(runtime, ann, late.id, "private")
    with runtime.engine.begin() as conn:  # as if its scoring were still under way
        scored = conn.execute(
            select(Submission.scored_at).where(Submission.id == late.id)
        ).scalar_one()
        conn.execute(update(Submission).where(Submission.id == late.id).values(scored_at=None))

    class ScoredMeanwhile:
        """A connection whose run is scored (by another connection) once its first read ends."""

        def __init__(self, connection: Connection) -> None:
            self.connection, self.reads = connection, 0

        def execute(self, *args: Any, **kwargs: Any) -> Any:
            result = self.connection.execute(*args, **kwargs)
            self.reads += 1
            if self.reads == 1:
                rows = list(result)  # read whole before the other connection writes
                with runtime.engine.begin() as other:
                    other.execute(
                        update(Submission).where(Submission.id == late.id).values(scored_at=scored)
                    )
                return rows
            return result

    with runtime.engine.connect() as conn:
        reading = ScoredMeanwhile(conn)
        found = counts(cast(Connection, reading), [(shown.id, ann.id, None)], shown.benchmark_id)
    assert reading.reads >= 2
    assert found == {shown.id: 1}  # "Try"; "Late" was not scored when the runs were read
    row = next(r for r in board_rows(runtime, "community") if r.model_name == "Shown")
    assert row.private_runs == 1  # scored after "Shown" was published: never counted


def _fail_judging(runtime: Runtime, submission_id: int) -> None:
    """What a final failure of the judging step leaves (services/steps.py): the state and its
    event."""
    with transaction(runtime.sessions) as session:
        sub = session.get(Submission, submission_id)
        assert sub is not None
        sub.status = Status.FAILED
        events.record(session, sub.id, "failed", "judging failed: the judge refused")


def test_a_public_run_off_the_boards_at_the_moment_counts(
    runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    """A try no reader could see when the row was published counts, whatever took it off the
    boards: hidden by an administrator, its judging failed, deleted. One back on the boards by
    then does not, and neither does the row itself, published while hidden."""
    ann = make_user(runtime, "ann", team=None)
    boss = make_user(runtime, "boss", role="admin", team=None)
    files = variants(synthetic["weak"], 6)
    hidden = submit(runtime, ann, files[0], "Hidden")
    set_hidden(runtime, boss, hidden.id, True)
    deleted = submit(runtime, ann, files[1], "Deleted")
    delete_submission(runtime, ann, deleted.id)
    failed = submit(runtime, ann, files[2], "Failed")
    _fail_judging(runtime, failed.id)
    back = submit(runtime, ann, files[3], "Back")
    set_hidden(runtime, boss, back.id, True)
    set_hidden(runtime, boss, back.id, False)
    chosen = submit(runtime, ann, files[4], "Chosen", visibility="private")
    set_visibility(runtime, ann, chosen.id, "public")
    own = submit(runtime, ann, files[5], "Own", visibility="private")
    set_hidden(runtime, boss, own.id, True)
    set_visibility(runtime, ann, own.id, "public")  # published while hidden
    set_hidden(runtime, boss, own.id, False)
    rows = {r.model_name: r for r in board_rows(runtime, "community")}
    assert set(rows) == {"Back", "Chosen", "Own"}
    # the hidden, the deleted and the failed one; "Back" was on the boards again
    assert rows["Chosen"].private_runs == 3
    assert rows["Own"].private_runs == 3  # the same: not itself
    assert rows["Back"].private_runs == 3  # each was off the boards before its upload
