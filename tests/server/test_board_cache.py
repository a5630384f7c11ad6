"""Board rows are cached per benchmark generation, and every change invalidates them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from medvidbench.server.runtime import Runtime
from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.entries import add_reported, promote, remove_entry
from medvidbench.server.services.evaluations import request_rejudge, rescore
from medvidbench.server.services.steps import claim, run_step
from medvidbench.server.services.submissions import delete_submission, submit
from medvidbench.server.store.models import User
from tests.server.conftest import HeldQueue, variants


def names(runtime: Runtime, kind: str = "community") -> list[str]:
    return [r.model_name for r in board_rows(runtime, kind)]


def test_every_change_to_a_board_is_seen_at_once(
    runtime: Runtime, alice: User, admin: User, synthetic: dict[str, Path]
) -> None:
    runtime.queue = HeldQueue()  # steps are run by hand below
    files = variants(synthetic["weak"], 2)
    assert board_rows(runtime, "community") is board_rows(runtime, "community")  # cached
    first = submit(runtime, alice, files[0], "First")
    assert names(runtime) == []  # queued: not on the board yet
    assert claim(runtime, first.id, "score", "w") and names(runtime) == []
    with runtime.sessions.begin() as session:  # hand the claim back, as an expired lease would
        from medvidbench.server.store.models import Submission

        row = session.get(Submission, first.id)
        row.status, row.lease_owner = "queued", None
    assert run_step(runtime, first.id, "score", "w1") == "done"
    assert names(runtime) == ["First"]  # scored: on the board
    assert board_rows(runtime, "community")[0].status == "scored"
    assert request_rejudge(runtime, first.id)
    assert claim(runtime, first.id, "judge", "j")
    assert board_rows(runtime, "community")[0].status == "judging"  # a status change shows
    before = board_rows(runtime, "community")
    assert (
        rescore(runtime, first.id, "strict-v2") and board_rows(runtime, "community") is not before
    )

    promote(runtime, admin, first.id)
    assert "First" in names(runtime, "official")
    add_reported(runtime, admin, "Paper Model", "Lab", {"cvs_acc": 0.5}, source="paper")
    assert "Paper Model" in names(runtime, "official")
    entry = next(r for r in board_rows(runtime, "official") if r.model_name == "Paper Model")
    remove_entry(runtime, admin, entry.entry_id)
    assert "Paper Model" not in names(runtime, "official")

    second = submit(runtime, alice, files[1], "Second")
    assert run_step(runtime, second.id, "score", "w2") == "done"
    assert sorted(names(runtime)) == ["First", "Second"]
    delete_submission(runtime, admin, second.id)
    assert names(runtime) == ["First"]
    untouched = board_rows(runtime, "community")
    assert board_rows(runtime, "community") is untouched  # no change: the same rows again


def test_a_change_decodes_only_the_new_bootstrap(
    runtime: Runtime, alice: User, synthetic: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A board ranked again after a submission is scored reads and decodes the stored
    replicates of that one evaluation; the rows are those of a process that decoded all."""
    from medvidbench.core.statistics import Bootstrap

    files = variants(synthetic["weak"], 3)
    for n, data in enumerate(files[:2]):
        submit(runtime, alice, data, f"Model {n}")
    assert all(r.rank_interval for r in board_rows(runtime, "community"))
    decoded: list[int] = []
    real = Bootstrap.aligned

    def counted(data: Any, keys: Any) -> Any:
        decoded.append(1)
        return real(data, keys)

    monkeypatch.setattr(Bootstrap, "aligned", staticmethod(counted))
    submit(runtime, alice, files[2], "Model 2")
    after = board_rows(runtime, "community")
    assert len(after) == 3 and len(decoded) == 1

    def shown(rows: list[Any]) -> list[Any]:
        return [(r.model_name, r.rank, r.rank_interval, r.tie_group, r.intervals) for r in rows]

    fresh = Runtime(runtime.settings)  # another process: nothing decoded yet
    assert shown(board_rows(fresh, "community")) == shown(after)
    assert len(decoded) == 4
    fresh.engine.dispose()


def test_rows_read_as_plain_records_show_what_the_database_holds(
    runtime: Runtime, alice: User, admin: User, synthetic: dict[str, Path]
) -> None:
    """On both databases: a row's date is its submission's day (read without the ORM's parsing),
    and its metrics, profile, scorer version and judge are those of the evaluation shown."""
    from medvidbench.server.services.evaluations import current_evaluation
    from medvidbench.server.store.models import Submission

    sub = submit(runtime, alice, variants(synthetic["weak"], 1)[0], "Dated")
    definition = runtime.definition(None)
    with runtime.sessions() as session:
        created = session.get(Submission, sub.id).created_at
        ev = current_evaluation(session, sub.id, definition)
    assert ev is not None
    (row,) = board_rows(runtime, "community")
    assert row.date == created.date().isoformat()
    assert (row.profile, row.scorer_version, row.judge) == (ev.profile, ev.scorer_version, ev.judge)
    assert row.metrics == {k: ev.metrics.get(k) for k in definition.metric_keys}
    add_reported(runtime, admin, "Paper Model", "Lab", {"cvs_acc": 0.5}, source="paper")
    paper = next(r for r in board_rows(runtime, "official") if r.model_name == "Paper Model")
    assert paper.date == "" and paper.metrics["cvs_acc"] == 0.5
