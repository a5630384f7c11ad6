"""Jinja rendering: one environment with autoescape on, and the filters pages share."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from medvidbench.core import display
from medvidbench.version import __version__

TEMPLATES = Path(__file__).parent / "templates"


def metric(number: Any, percent: bool = False) -> str:
    """A metric as the leaderboard shows it (:func:`medvidbench.core.display.value`)."""
    return display.value(number, percent)


@cache
def templates() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["metric"] = metric
    env.filters["breakable"] = breakable
    env.globals["absent"] = display.absent  # why a metric has no value, in the table's words
    env.filters["count"] = display.count  # {{ n|count("item") }}: "1 item", "3 items"
    env.globals["version"] = __version__
    return env


# The confirmations a page may show once after a redirect, by the code the request stored in
# the session (fixed texts: nothing a user typed is shown).
NOTICES = {
    "signed-up": "Your account is ready, and you are logged in.",
    "signed-up-waiting": "Your account is ready; an administrator must approve it before you "
    "can submit.",
    "logged-in": "You are logged in.",
    "logged-out": "You are logged out.",
}


def notify(request: Request, code: str) -> None:
    """Show a confirmation on the next page this browser opens."""
    request.session["notice"] = code


def breakable(title: str) -> Markup:
    """A column title that may wrap before "@" only (escaped, then a break hint): never at an
    underscore, which would split a name ("CVS_" / "acc")."""
    return escape(title).replace("@", Markup("<wbr>@"))


def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Render a page with what every page needs: the user, the CSRF token, the demo flag."""
    from medvidbench.server.web.deps import LazyCsrf, current_user

    rt = request.app.state.runtime
    user = context.pop("user", None) or current_user(request)
    # The benchmark the page belongs to (None: a page of the whole site, such as the list of
    # benchmarks); the navigation links to its pages.
    slug = context.pop("slug", rt.default_slug)
    definition = context.pop("definition", None) or (rt.definition(slug) if slug else None)
    demo = context.pop("demo", None)
    if demo is None and slug is not None:
        from medvidbench.server.services.test_sets import current_benchmark

        demo = current_benchmark(rt, slug).is_demo
    html = (
        templates()
        .get_template(name)
        .render(
            request=request,
            user=user,
            csrf=LazyCsrf(request),
            demo=demo,
            signup=rt.settings.signup_enabled,
            definition=definition,
            prefix=f"/b/{definition.slug}" if definition else None,
            several=len(rt.hosted) > 1,
            # a one-time confirmation of what the previous request did (signed up, logged in)
            notice=NOTICES.get(str(request.session.pop("notice", "")), "")
            or str(request.session.pop("notice_text", "")),
            **context,
        )
    )
    return HTMLResponse(html, status_code=status)


def compile_templates() -> None:
    """Compile every template now (a server's warm-up), not on its first page view."""
    env = templates()
    for name in env.list_templates(extensions=["html"]):
        env.get_template(name)
