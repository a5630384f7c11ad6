"""The service layer end to end, on SQLite and PostgreSQL: upload to ranked entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from medvidbench.core.errors import (
    ConflictError,
    InvalidSubmissionError,
    QuotaExceededError,
    UsageError,
)
from medvidbench.library import evaluate
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.entries import add_reported, promote, remove_entry
from medvidbench.server.services.exports import export_board
from medvidbench.server.services.steps import claim, run_step
from medvidbench.server.services.submission_reads import get_submission
from medvidbench.server.services.submissions import delete_submission, submit
from medvidbench.server.store.models import AuditLog, Evaluation, Submission, User
from tests.server.conftest import HeldQueue, make_user


def test_full_lifecycle_upload_to_ranked_entry(
    runtime: Runtime, alice: User, synthetic: dict[str, Path]
) -> None:
    data = synthetic["strong"].read_bytes()
    sub = submit(runtime, alice, data, "StrongNet", model_url="https://example.org/strong")
    done = get_submission(runtime, sub.id, alice)
    assert done.status == "scored" and done.verdict == "valid" and done.attempts == 1
    assert runtime.files.exists("submission", sub.id)  # the folder, or the database
    expected = evaluate(data, runtime.ground_truth(done_sha(runtime))).metrics
    (row,) = board_rows(runtime, "community")
    assert row.rank == 1 and row.model_name == "StrongNet" and row.team == "Team A"
    assert row.metrics == expected
    assert row.metrics["vs_llm"] is None and row.metrics_present == 7  # pending, not zero
    assert row.profile == "leaderboard-v1" and row.status == "scored"


def done_sha(runtime: Runtime) -> str:
    from medvidbench.server.services.submissions import current_benchmark

    return current_benchmark(runtime).gt_sha256


def test_invalid_file_is_rejected_with_every_problem_and_nothing_stored(
    runtime: Runtime, alice: User
) -> None:
    bad = json.dumps([{"id": "x", "qa_type": "tal", "prediction": None}] * 3).encode()
    with pytest.raises(InvalidSubmissionError) as info:
        submit(runtime, alice, bad, "Broken")
    assert len(info.value.problems) >= 3
    with runtime.sessions() as session:
        sub = session.scalar(select(Submission).where(Submission.model_name == "Broken"))
        assert sub is not None and sub.status == "rejected" and not sub.stored
        assert "expected field 'prediction' to be a string" in (sub.error or "")
    assert not runtime.files.exists("submission", sub.id)
    assert board_rows(runtime, "community") == []


def test_duplicates_and_taken_names_are_refused(
    runtime: Runtime, alice: User, synthetic: dict[str, Path]
) -> None:
    first = submit(runtime, alice, synthetic["strong"].read_bytes(), "Model One")
    with pytest.raises(
        ConflictError, match=f"you already submitted this exact file as submission {first.id}"
    ):
        submit(runtime, alice, synthetic["strong"].read_bytes(), "Model Two")
    with pytest.raises(ConflictError, match="already on the leaderboard"):
        submit(runtime, alice, synthetic["weak"].read_bytes(), "  model   ONE ")


def test_quota_counts_only_accepted_submissions(
    tmp_path: Path, synthetic: dict[str, Path], runtime: Runtime
) -> None:
    runtime.settings.quota_per_day = 2
    user = make_user(runtime, "bob", team="Team B")
    with pytest.raises(InvalidSubmissionError):
        submit(runtime, user, b"[]", "Nothing")
    submit(runtime, user, synthetic["strong"].read_bytes(), "B1")
    submit(runtime, user, synthetic["weak"].read_bytes(), "B2")
    with pytest.raises(QuotaExceededError, match="2 submissions per day"):
        submit(runtime, user, synthetic["garbage"].read_bytes(), "B3")


def test_model_url_must_be_http(runtime: Runtime, alice: User, synthetic: dict[str, Path]) -> None:
    with pytest.raises(UsageError, match="http:// or https://"):
        submit(
            runtime, alice, synthetic["strong"].read_bytes(), "X", model_url="javascript:alert(1)"
        )


def test_archetypes_rank_perfect_strong_weak_garbage(
    runtime: Runtime, alice: User, synthetic: dict[str, Path]
) -> None:
    for name in ("garbage", "weak", "perfect", "strong"):
        submit(runtime, alice, synthetic[name].read_bytes(), name)
    assert [r.model_name for r in board_rows(runtime, "community")] == [
        "perfect",
        "strong",
        "weak",
        "garbage",
    ]


def test_promote_report_remove_and_audit(
    runtime: Runtime, alice: User, admin: User, synthetic: dict[str, Path]
) -> None:
    sub = submit(runtime, alice, synthetic["strong"].read_bytes(), "Promoted")
    with pytest.raises(Exception, match="not allowed"):
        promote(runtime, alice, sub.id)
    promote(runtime, admin, sub.id, verified_date="2026-11-01")
    add_reported(
        runtime, admin, "GPT-4.1", "OpenAI", {"cvs_acc": 0.018, "vs_llm": 2.49}, source="paper"
    )
    rows = board_rows(runtime, "official")
    assert {r.model_name for r in rows} == {"Promoted", "GPT-4.1"}
    reported = next(r for r in rows if r.model_name == "GPT-4.1")
    assert reported.badges == ["reported"] and reported.metrics["nap_acc"] is None
    assert next(r for r in rows if r.model_name == "Promoted").badges == ["verified"]
    with pytest.raises(UsageError, match="outside 1-5"):
        add_reported(runtime, admin, "Bad", "x", {"vs_llm": 7.0}, source="?")
    remove_entry(runtime, admin, reported.entry_id)
    assert [r.model_name for r in board_rows(runtime, "official")] == ["Promoted"]
    with runtime.sessions() as session:
        actions = list(session.scalars(select(AuditLog.action).order_by(AuditLog.id)))
    assert {"entry.promote", "entry.add", "entry.remove"} <= set(actions)


def test_delete_removes_file_and_entries(
    runtime: Runtime, alice: User, admin: User, synthetic: dict[str, Path]
) -> None:
    sub = submit(runtime, alice, synthetic["strong"].read_bytes(), "Gone")
    delete_submission(runtime, admin, sub.id)
    assert not runtime.files.exists("submission", sub.id)
    assert board_rows(runtime, "community") == []
    submit(runtime, alice, synthetic["strong"].read_bytes(), "Gone")  # name and file are free


def test_without_a_queue_a_submission_is_refused_not_silently_left_unscored(
    runtime: Runtime, alice: User, synthetic: dict[str, Path]
) -> None:
    from medvidbench.core.errors import NoQueueError
    from medvidbench.server.runtime import NoQueue

    runtime.queue = NoQueue()
    with pytest.raises(NoQueueError, match="cannot queue the scoring of submission"):
        submit(runtime, alice, synthetic["weak"].read_bytes(), "Unqueued")
    for ask in (
        lambda: runtime.queue.enqueue_judge(1),
        lambda: runtime.queue.enqueue_rescore(1, "strict-v2"),
    ):
        with pytest.raises(NoQueueError, match="this process has no job queue"):
            ask()


def test_services_enqueue_through_the_runtime_queue(
    runtime: Runtime, alice: User, synthetic: dict[str, Path]
) -> None:
    from medvidbench.server.services.evaluations import queue_rejudge, queue_rescore

    held = runtime.queue = HeldQueue()
    sub = submit(runtime, alice, synthetic["weak"].read_bytes(), "Held")
    assert held.jobs == [("score", sub.id)]
    assert run_step(runtime, sub.id, "score", "w") == "done"
    assert queue_rescore(runtime, sub.id, "strict-v2") and queue_rejudge(runtime, sub.id)
    assert not queue_rescore(runtime, 99_999, "strict-v2")
    assert held.jobs[1:] == [("rescore", sub.id, "strict-v2"), ("judge", sub.id)]


def test_claims_are_exclusive_and_leases_expire(
    runtime: Runtime, alice: User, synthetic: dict[str, Path]
) -> None:
    runtime.queue = HeldQueue()  # nothing runs on its own here
    sub = submit(runtime, alice, synthetic["weak"].read_bytes(), "Leased")
    assert claim(runtime, sub.id, "score", "w1")
    assert not claim(runtime, sub.id, "score", "w2")
    assert run_step(runtime, sub.id, "score", "w3") == "skipped"
    runtime.settings.job_lease_seconds = 5
    with runtime.sessions.begin() as session:
        session.get(Submission, sub.id).lease_until = Submission.created_at  # long expired
    assert run_step(runtime, sub.id, "score", "w2") == "done"
    with runtime.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Evaluation)) == 1
        assert session.get(Submission, sub.id).attempts == 2


def test_failures_are_retried_then_shown_with_the_reason(
    runtime: Runtime, alice: User, synthetic: dict[str, Path]
) -> None:
    runtime.queue = HeldQueue()
    sub = submit(runtime, alice, synthetic["weak"].read_bytes(), "Fragile")
    runtime.files.delete("submission", sub.id)
    runtime.files.delete("matched", sub.id)  # what its check kept
    outcomes = [run_step(runtime, sub.id, "score", f"w{i}") for i in range(3)]
    assert outcomes == ["retry", "retry", "failed"]
    failed = get_submission(runtime, sub.id, alice)
    assert failed.status == "failed" and "missing" in (failed.error or "")
    assert board_rows(runtime, "community") == []


def test_export_neutralises_spreadsheet_formulas(runtime: Runtime, admin: User) -> None:
    add_reported(
        runtime, admin, '=HYPERLINK("http://x")', "+team", {"cvs_acc": 0.5}, source="@paper"
    )
    csv_text = export_board(runtime, "official", "csv")
    assert "'=HYPERLINK" in csv_text and "'+team" in csv_text and "'@paper" in csv_text
    assert "CVS_acc" in csv_text.splitlines()[0]
    rows = json.loads(export_board(runtime, "official", "json"))
    assert rows[0]["metrics"]["cvs_acc"] == 0.5


@pytest.mark.parametrize("separator", [",", ";", "\t", "|"])
def test_export_has_no_live_formula_whatever_the_separator(
    runtime: Runtime, admin: User, separator: str
) -> None:
    """A spreadsheet splits cells on its locale's separator: no piece may start a formula."""
    hostile = ["x;=cmd|' /C calc'!A0;", "a,+1", "t\t@SUM(A1)", "p| -2+3", 'q; "=1']
    for i, name in enumerate(hostile):
        add_reported(runtime, admin, name, name, {"cvs_acc": 0.5}, source=name + str(i))
    for line in export_board(runtime, "official", "csv").splitlines()[1:]:
        for piece in line.split(separator):
            text = piece.strip().lstrip('"').lstrip()
            try:
                float(text)
                continue
            except ValueError:
                pass
            assert not text.startswith(("=", "+", "-", "@")), (separator, line)


def test_rescore_keeps_old_evaluations(
    runtime: Runtime, alice: User, synthetic: dict[str, Path]
) -> None:
    from medvidbench.server.services.evaluations import rescore

    sub = submit(runtime, alice, synthetic["format-noisy"].read_bytes(), "Noisy")
    assert rescore(runtime, sub.id, "strict-v2") and not rescore(runtime, sub.id, "strict-v2")
    with runtime.sessions() as session:
        profiles = sorted(
            session.scalars(select(Evaluation.profile).where(Evaluation.submission_id == sub.id))
        )
    assert profiles == ["leaderboard-v1", "strict-v2"]


def test_each_step_has_its_own_attempts_and_retries_back_off(
    runtime: Runtime, alice: User, synthetic: dict[str, Path]
) -> None:
    """job_max_attempts counts the judge step's own attempts, not the scoring before it."""
    from medvidbench.server.services.steps import retry_delay, step_attempts

    runtime.queue = HeldQueue()
    sub = submit(runtime, alice, synthetic["weak"].read_bytes(), "Judge fails")
    assert run_step(runtime, sub.id, "score", "w0") == "done"
    assert step_attempts(runtime, sub.id) == 0

    class BrokenJudge:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("judge exploded")

    outcomes = [run_step(runtime, sub.id, "judge", f"j{i}", judge=BrokenJudge()) for i in range(3)]
    assert outcomes == ["retry", "retry", "failed"]  # 3 judge attempts, job_max_attempts = 3
    with runtime.sessions() as session:
        row = session.get(Submission, sub.id)
        assert row is not None and row.attempts == 4 and row.step_attempts == 3
    assert [retry_delay(n) for n in range(1, 7)] == [5, 15, 45, 135, 300, 300]


def test_a_submission_whose_judging_failed_leaves_the_boards_and_can_come_back(
    runtime: Runtime, alice: User, synthetic: dict[str, Path]
) -> None:
    """Failed is a private state that holds no model name and spends no quota: a submission
    whose judging step failed for good (not an outage) leaves the boards with it, rather than
    staying ranked under a name another team may then take. An administrator's re-judging puts
    it back, waiting for the judge, unless its name was taken meanwhile."""
    from medvidbench.core.errors import ConflictError
    from medvidbench.server.services.evaluations import request_rejudge
    from medvidbench.server.services.events import log
    from medvidbench.server.services.quota import quota

    runtime.queue = HeldQueue()
    runtime.settings.quota_per_day = 10
    bob = make_user(runtime, "bob", team="Team B")

    class BrokenJudge:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("judge exploded")

    sub = submit(runtime, alice, synthetic["weak"].read_bytes(), "Judged Twice")
    assert run_step(runtime, sub.id, "score", "w0") == "done"
    assert [r.model_name for r in board_rows(runtime, "community")] == ["Judged Twice"]
    assert quota(runtime, alice)[0].used == 1
    outcomes = [run_step(runtime, sub.id, "judge", f"j{i}", judge=BrokenJudge()) for i in range(3)]
    assert outcomes == ["retry", "retry", "failed"]
    assert get_submission(runtime, sub.id, alice).status == "failed"
    assert board_rows(runtime, "community") == []  # off the board, with its failed state
    assert "Judged Twice" not in export_board(runtime, "community", "csv")
    assert quota(runtime, alice)[0].used == 0
    last = log(runtime, sub.id, full=True)[-1]
    assert (
        last["kind"] == "failed"
        and "off the boards, until an administrator re-judges it" in last["message"]
    )

    # Back on the board, waiting for the judge; and again off it after the same failure.
    assert request_rejudge(runtime, sub.id)
    (row,) = board_rows(runtime, "community")
    assert (row.model_name, row.status) == ("Judged Twice", "scored")
    assert row.metrics["vs_llm"] is None  # pending, not zero
    for i in range(3):
        run_step(runtime, sub.id, "judge", f"k{i}", judge=BrokenJudge())
    assert board_rows(runtime, "community") == []

    # Off the board its name is free: another team takes it, and the failed one cannot come
    # back under it (nor be counted twice on one board).
    taken = submit(runtime, bob, synthetic["strong"].read_bytes(), "Judged Twice")
    assert run_step(runtime, taken.id, "score", "w1") == "done"
    with pytest.raises(ConflictError, match="taken on the leaderboard since"):
        request_rejudge(runtime, sub.id)
    assert [(r.model_name, r.team) for r in board_rows(runtime, "community")] == [
        ("Judged Twice", "Team B")
    ]
    assert get_submission(runtime, sub.id, alice).status == "failed"
    # A submission whose scoring failed has nothing to judge.
    broken = submit(runtime, alice, synthetic["strong"].read_bytes(), "Never Scored")
    with runtime.sessions() as session:
        row_ = session.get(Submission, broken.id)
        assert row_ is not None
        row_.status = "failed"
        session.commit()
    assert not request_rejudge(runtime, broken.id)

    # Nor over its own file, submitted again while it counted for nothing.
    quiet = submit(
        runtime, alice, synthetic["shuffled"].read_bytes(), "Quiet", visibility="private"
    )
    assert run_step(runtime, quiet.id, "score", "w2") == "done"
    for i in range(3):
        run_step(runtime, quiet.id, "judge", f"m{i}", judge=BrokenJudge())
    last = log(runtime, quiet.id, full=True)[-1]
    assert last["message"].endswith("it stays failed until an administrator re-judges it")
    submit(runtime, alice, synthetic["shuffled"].read_bytes(), "Quiet again", visibility="private")
    with pytest.raises(ConflictError, match="submitted again since as submission"):
        request_rejudge(runtime, quiet.id)


def test_an_infrastructure_error_is_rescheduled_at_most_max_attempts_times(
    runtime: Runtime,
) -> None:
    from medvidbench.server.jobs import Jobs

    scheduled: list[tuple[Any, float]] = []

    class Task:
        def schedule(self, args: Any, delay: float) -> None:
            scheduled.append((args, delay))

    jobs = runtime.queue
    assert isinstance(jobs, Jobs)
    for attempt in range(5):
        jobs._later(Task(), 7, attempt, lease=120)
    assert [args for args, _ in scheduled] == [(7, 1), (7, 2)]  # job_max_attempts = 3 in all
    assert [delay for _, delay in scheduled] == [125.0, 135.0]


def test_a_rescore_whose_worker_died_is_run_again_by_the_reaper(
    runtime: Runtime, alice: User, synthetic: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queue forgets a job whose worker dies mid-run; the request and the start are logged,
    so the reaper runs the re-score again, and gives up (shown in the log) after
    job_max_attempts starts."""
    from medvidbench.server.jobs import Jobs
    from medvidbench.server.services import evaluations
    from medvidbench.server.services.events import log

    jobs = runtime.queue
    assert isinstance(jobs, Jobs)
    sub = submit(runtime, alice, synthetic["weak"].read_bytes(), "Rescored")
    runtime.settings.job_lease_seconds = 0  # every unfinished re-score is overdue at once
    assert not evaluations.request_rescore(runtime, 99_999, "strict-v2")  # nothing recorded
    assert evaluations.request_rescore(runtime, sub.id, "strict-v2")  # ... and its job is lost
    assert evaluations.lost_rescores(runtime) == [(sub.id, "strict-v2")]

    def dies(*args: Any, **kwargs: Any) -> Any:
        raise SystemExit("worker killed")  # what a SIGKILL looks like from the log: no end

    with monkeypatch.context() as patch:
        patch.setattr(evaluations, "_report", dies)
        with pytest.raises(SystemExit):
            evaluations.rescore(runtime, sub.id, "strict-v2")
    assert evaluations.lost_rescores(runtime) == [(sub.id, "strict-v2")]
    assert jobs._reap() == 1  # the immediate queue runs it now
    with runtime.sessions() as session:
        profiles = set(
            session.scalars(select(Evaluation.profile).where(Evaluation.submission_id == sub.id))
        )
    assert profiles == {"leaderboard-v1", "strict-v2"}
    assert evaluations.lost_rescores(runtime) == []

    # One that dies every time is given up after job_max_attempts (3) starts, and says so.
    evaluations.request_rescore(runtime, sub.id, "leaderboard-v1")
    with monkeypatch.context() as patch:
        patch.setattr(evaluations, "_report", dies)
        for _ in range(3):
            assert evaluations.lost_rescores(runtime) == [(sub.id, "leaderboard-v1")]
            with pytest.raises(SystemExit):
                evaluations.rescore(runtime, sub.id, "leaderboard-v1")
    assert evaluations.lost_rescores(runtime) == []
    kinds = [e["kind"] for e in log(runtime, sub.id, full=True)]
    assert kinds[-1] == "rescore-failed" and kinds.count("rescore-started") == 5


def test_a_judge_job_finding_the_database_unreachable_is_rescheduled(
    runtime: Runtime, alice: User, synthetic: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a score job: one back-off line and the job again later, not a traceback and a lost
    job (the judge step looked up the submission's benchmark outside its outage handling)."""
    from sqlalchemy.exc import OperationalError

    from medvidbench.server import jobs as jobs_module
    from medvidbench.server.jobs import Jobs

    jobs = runtime.queue
    assert isinstance(jobs, Jobs)
    sub = submit(runtime, alice, synthetic["weak"].read_bytes(), "Judged later")

    def unreachable(*args: Any) -> str:
        raise OperationalError("SELECT 1", {}, Exception("connection refused"))

    scheduled: list[Any] = []
    monkeypatch.setattr(jobs_module, "benchmark_of", unreachable)
    monkeypatch.setattr(jobs, "_later", lambda task, sid, attempt, lease: scheduled.append(sid))
    jobs._slugs.clear()
    assert jobs._judge_step(sub.id, 0) == "later"
    assert scheduled == [sub.id]
