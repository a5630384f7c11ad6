"""A submission's detail: everything its page and the API show about it (never ground truth)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from medvidbench.core.config import judge_wanted
from medvidbench.core.display import public_provenance
from medvidbench.core.statistics import public, usable
from medvidbench.server.lifecycle import FINAL, ON_BOARD, Status, timeline
from medvidbench.server.roles import STAFF
from medvidbench.server.runtime import Runtime
from medvidbench.server.services import evaluations, events
from medvidbench.server.services.boards import would_rank
from medvidbench.server.services.submission_reads import get_submission
from medvidbench.server.store.models import Submission, TestSet, User


def submission_view(
    runtime: Runtime, submission_id: int, viewer: User | None, evaluation: int | None = None
) -> dict[str, Any]:
    """Everything a detail page or the API shows about a submission (never ground truth): its
    state, the evaluation asked for (default: the boards' one), every evaluation stored, the
    validation warnings and the log.

    The submitter's own diagnostics (parse examples, warnings, errors) are shown to them and
    to staff.
    """
    sub = get_submission(runtime, submission_id, viewer)
    staff = viewer is not None and viewer.role in STAFF
    owner = staff or (viewer is not None and viewer.id == sub.user_id)
    with runtime.sessions() as session:
        slug = session.scalar(select(TestSet.slug).where(TestSet.id == sub.benchmark_id))
        definition = runtime.definition(slug)
        ev = evaluations.chosen_evaluation(session, sub.id, definition, evaluation)
        stored = evaluations.evaluations_of(session, sub.id)
        team = session.get(Submission, sub.id).team  # type: ignore[union-attr]
    listed = [evaluations.describe(e, definition, ev) for e in stored]
    judged = any(m.judged for m in definition.metrics)
    judge_on = judge_wanted(runtime.settings) and judged
    per_task = ev.per_task if ev else {}
    if not owner:
        per_task = {
            t: {k: v for k, v in info.items() if k != "unparsed_examples"}
            for t, info in per_task.items()
        }
    if not judge_on:  # nothing will judge them here: say so, as the pages do
        per_task = {
            t: {**info, "status": "not judged"} if info.get("status") == "pending judge" else info
            for t, info in per_task.items()
        }
    on_boards = ev is not None and any(e["shown"] and e["on_boards"] for e in listed)
    return {
        "id": sub.id,
        "benchmark": definition.slug,
        "model_name": sub.model_name,
        "model_url": sub.model_url,
        "team": team.name if team else sub.organisation,
        "status": sub.status,
        **timeline(sub.status, judged),
        "final": sub.status in FINAL or (sub.status in ON_BOARD and not judge_on),
        "judge_on": judge_on,
        # the last judge step failed (the judge's fault: it is tried again)
        "judge_failed": judge_on and sub.status == Status.SCORED and sub.error is not None,
        # whether the benchmark has judged metrics at all (no judge words otherwise)
        "judged": judged,
        "created_at": sub.created_at.isoformat(),
        "verdict": sub.verdict,
        "missing_tasks": sub.missing_tasks,
        "records": sub.record_count,
        "error": sub.error if owner else None,
        "settings": sub.settings,
        "evaluation_id": ev.id if ev else None,
        "metrics": ev.metrics if ev else None,
        "per_task": per_task,
        "per_dataset": ev.per_dataset if ev else {},
        # the endpoint (an internal address) for staff only
        "judge": (ev.judge if staff else public_provenance(ev.judge)) if ev else None,
        "profile": ev.profile if ev else None,
        "scorer_version": ev.scorer_version if ev else None,
        # 95 % intervals with their seed, replicates and cluster rule; the replicates stay inside
        "statistics": public(usable(ev.statistics, definition.labels)) if ev else None,
        # every scoring stored (re-scores under other profiles included), oldest first
        "evaluations": listed,
        "hidden": sub.hidden,
        "visibility": sub.visibility,
        # where a private run would rank among the public ones (its submitter's view)
        "would_rank": would_rank(runtime, definition.slug, sub.id)
        if ev and on_boards and owner and sub.visibility == "private"
        else None,
        # validation's warnings, each in full (submitter and staff; others see how many)
        "warnings": events.warnings(runtime, sub.id) if owner else None,
        # the steps with their times; error texts only for the submitter and staff
        "log": events.log(runtime, sub.id, full=owner),
        "owner": owner,
    }
