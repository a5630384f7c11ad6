"""The admin area: users, submissions, the official board, the audit log."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from medvidbench.core.config import judge_wanted
from medvidbench.core.errors import (
    ConflictError,
    NotFoundError,
    UsageError,
)
from medvidbench.server.services import accounts, administration, audit, boards, entries
from medvidbench.server.services.submission_reads import benchmark_of
from medvidbench.server.services.submissions import delete_submission
from medvidbench.server.services.visibility import set_hidden
from medvidbench.server.store.models import User
from medvidbench.server.web.deps import (
    admin_user,
    check_csrf,
    form_id,
)
from medvidbench.server.web.pages.common import see as _see
from medvidbench.server.web.render import page

router = APIRouter(include_in_schema=False)


@router.get("/admin", response_class=HTMLResponse)
def admin(
    request: Request,
    benchmark: str = "",
    audit_page: int = Query(1, ge=1, le=1_000_000, description="The audit log's page."),
) -> Response:
    """The admin area; the board and the forms that need one are ``benchmark``'s."""
    user = admin_user(request)
    rt = request.app.state.runtime
    definition = rt.definition(benchmark or None)
    seen = administration.overview(rt, user, log_page=audit_page, slug=definition.slug)
    return page(
        request,
        "admin.html",
        user=user,
        users=seen.users,
        subs=seen.submissions,
        log=seen.log,
        log_page=seen.log_page,
        log_pages=seen.log_pages,
        off_board=seen.off_board,
        ask=ask,
        official=boards.board_rows(rt, "official", slug=definition.slug),
        slug=definition.slug,
        definition=definition,
        metrics=definition.metrics,
        profiles=definition.profiles,
        hosted=rt.hosted,
        has_tokens=seen.has_tokens,
        judge_on=judge_wanted(rt.settings),
    )


@router.post("/admin/{action}")
async def admin_action(request: Request, action: str) -> Response:
    actor = admin_user(request)
    form = await request.form()
    check_csrf(request, form)
    rt = request.app.state.runtime
    value = {k: str(v) for k, v in form.items() if isinstance(v, str)}
    # every message names the benchmark whose board or submission the action is about
    value["benchmark"] = rt.definition(value.get("benchmark") or None).slug
    handler = _ADMIN.get(action)
    if handler is None:
        raise NotFoundError(f"no admin action {action!r}")
    if form.get("confirm") != "yes":
        # One confirmation per action: the browser asks (app.js); without script, this page
        # asks once, with the same fields and one button.
        fields = {k: v for k, v in value.items() if k not in ("csrf", "confirm")}
        question = ask(action, value)
        return page(request, "confirm.html", action=action, fields=fields, question=question)
    try:
        handler(rt, actor, value)
    except ValueError as exc:
        raise UsageError(f"invalid value: {exc}") from None
    slug = value["benchmark"]
    done, where = _DONE.get(action, ("Done.", ""))
    # shown once on the admin page (escaped there); a field the form lacks reads as ""
    request.session["notice_text"] = done.format_map(defaultdict(str, value))
    return _see(f"/admin?benchmark={slug}{where}")


def _role(rt: Any, actor: User, f: dict[str, str]) -> None:
    accounts.set_role(rt, actor, f.get("username", ""), f.get("role", ""))


def _add(rt: Any, actor: User, f: dict[str, str]) -> None:
    definition = rt.definition(f.get("benchmark") or None)
    metrics = {m.key: float(f[m.key]) for m in definition.metrics if f.get(m.key, "").strip()}
    entries.add_reported(
        rt,
        actor,
        f.get("model_name", ""),
        f.get("team", ""),
        metrics,
        source=f.get("source", "") or "added by an admin",
        model_url=f.get("model_url") or None,
        benchmark=definition.slug,
    )


def _rescore(rt: Any, actor: User, f: dict[str, str]) -> None:
    """Queue a re-score (or a re-judging), then audit it: a refused one writes nothing."""
    from medvidbench.server.services.evaluations import queue_rejudge, queue_rescore

    sid = form_id(f.get("submission_id"))
    definition = rt.definition(benchmark_of(rt, sid))  # an unknown id stops here (404)
    kind = f.get("kind", "rescore")
    if kind == "rejudge":
        if not queue_rejudge(rt, sid):
            raise ConflictError(
                f"submission {sid} cannot be re-judged: it is not scored yet, its scoring "
                "failed, it is being judged now, or it was deleted"
            )
    else:
        queue_rescore(rt, sid, definition.profile(f.get("profile") or None).name)
    audit.record(rt, actor, f"submission.{kind}", f"submission:{sid}", profile=f.get("profile", ""))


def _approve(rt: Any, actor: User, f: dict[str, str]) -> None:
    accounts.approve_user(rt, actor, f.get("username", ""))


# What each action asks before it is done (the one confirmation; {fields} of its form).
_ASK: dict[str, str] = {
    "role": "Make {username} {role}?",
    "approve": "Approve {username}? They may then submit.",
    "promote": "Put submission {submission_id} on the official {benchmark} board as verified?",
    "add": "Add {model_name} to the official {benchmark} board as a reported result?",
    "remove": "Take entry {entry_id} off the official {benchmark} board?",
    "hide": "Hide submission {submission_id} from every board? Unhide puts it back.",
    "unhide": "Put submission {submission_id} back on the boards?",
    "delete": "Delete submission {submission_id} for good? Its file and scores are removed; "
    "this cannot be undone (the audit log keeps the record).",
    "rescore": "Re-score submission {submission_id} under the profile {profile}?",
    "rejudge": "Re-judge submission {submission_id}? Cached judgements cost nothing.",
}


def ask(action: str, fields: dict[str, str]) -> str:
    """The question an action asks, with its form's values (escaped where it is shown)."""
    key = "rejudge" if action == "rescore" and fields.get("kind") == "rejudge" else action
    return _ASK.get(key, "Do this?").format_map(defaultdict(str, fields))


# What each action confirms, and the part of the page it returns to.
_DONE: dict[str, tuple[str, str]] = {
    "role": ("{username} is now {role}.", "#users"),
    "approve": ("{username} is approved and may submit.", "#users"),
    "promote": ("Submission {submission_id} is on the official {benchmark} board.", "#official"),
    "add": ("{model_name} is on the official {benchmark} board as a reported result.", "#official"),
    "remove": ("Entry {entry_id} is off the official {benchmark} board.", "#official"),
    "hide": (
        "Submission {submission_id} is hidden from every board (Unhide puts it back).",
        "#submissions",
    ),
    "unhide": ("Submission {submission_id} is back on the boards.", "#submissions"),
    "delete": (
        "Submission {submission_id} is deleted (its record stays in the audit log).",
        "#submissions",
    ),
    "rescore": ("Submission {submission_id}: {kind} queued.", "#submissions"),
}

_ADMIN: dict[str, Any] = {
    "role": _role,
    "approve": _approve,
    "promote": lambda rt, a, f: entries.promote(rt, a, form_id(f.get("submission_id"))),
    "add": _add,
    "remove": lambda rt, a, f: entries.remove_entry(rt, a, form_id(f.get("entry_id"))),
    "delete": lambda rt, a, f: delete_submission(rt, a, form_id(f.get("submission_id"))),
    "hide": lambda rt, a, f: set_hidden(rt, a, form_id(f.get("submission_id")), True),
    "unhide": lambda rt, a, f: set_hidden(rt, a, form_id(f.get("submission_id")), False),
    "rescore": _rescore,
}
