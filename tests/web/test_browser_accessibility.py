"""Every page in Chromium, light and dark: axe-core finds no violation, and at 390 px no page is
wider than the screen (a wide table scrolls inside its own box, which says so).

axe-core is never downloaded by a test: ``./install.sh --test`` installs the version pinned in
``tests/web/axe/package-lock.json`` with ``npm ci`` (or set ``MEDVIDBENCH_AXE`` to an
``axe.min.js``). Without it these tests are skipped on a developer's machine and fail under
CI=true. Screenshots go to the CI artifacts with the other browser tests'.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.live import CLI, create_user, live_server
from tests.web.test_browser import browser, shot  # noqa: F401  (the shared Chromium fixture)

AXE = Path(
    os.environ.get("MEDVIDBENCH_AXE")
    or Path(__file__).parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
)
ADMIN, PASSWORD = "keeper", "keeper-password-123"
THEMES = ("light", "dark")
# Nothing is scoped out: Swagger UI's page (/api/docs) is checked like ours, with our stylesheet
# over its colours (api-docs.css) and its deep links off (api-docs.js).


@dataclass(frozen=True)
class Visit:
    """A page to check: its path, whether it needs the admin's session, and what shows it is
    ready (a selector drawn by the page's script, or "" for a page without one)."""

    path: str
    admin: bool = False
    ready: str = ""

    @property
    def name(self) -> str:
        slug = self.path.strip("/").replace("/", "-").replace("?", "-").replace("=", "-")
        return (slug or "home") + ("-admin" if self.admin else "")


def site_with_uploads(data: Path, promote: bool = False) -> Iterator[dict[str, Any]]:
    """Both benchmarks on one server, one scored submission on each community board; the
    entries a mixed comparison takes (scored here, and reported); with ``promote``, the
    MedVidBench submission is on the official board too (a verified badge)."""
    create_user(data, ADMIN, PASSWORD, "--admin")
    token = subprocess.run(
        [*CLI, "tokens", "create", ADMIN, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with live_server(data, env={"MEDVIDBENCH_BENCHMARKS": ""}) as server:
        demo = data / "demo"
        video = _upload(server.url, token, demo / "medvidbench" / "predictions_strong.json", "")
        grounding = _upload(server.url, token, demo / "medsg" / "results_strong.json", "medsg")
        boards = [
            httpx.get(f"{server.url}/api/v1/boards/{kind}").json()
            for kind in ("community", "official")
        ]
        mixed = f"{boards[0][0]['entry_id']},{boards[1][0]['entry_id']}"  # scored and reported
        if promote:
            _promote(server.url, video)  # a verified badge on the official board, both themes
        yield {
            "url": server.url,
            "video": video,
            "grounding": grounding,
            "mixed": mixed,
            "token": token,
            "data": data,
        }


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from site_with_uploads(tmp_path_factory.mktemp("a11y"), promote=True)


def _upload(url: str, token: str, path: Path, slug: str) -> int:
    auth = {"Authorization": f"Bearer {token}"}
    base = f"{url}/api/v1/benchmarks/{slug}" if slug else f"{url}/api/v1"
    with path.open("rb") as fh:
        answer = httpx.post(
            f"{base}/submissions",
            headers=auth,
            files={"file": (path.name, fh, "application/json")},
            data={"model_name": f"A11y {path.stem}"},
            timeout=60,
        )
    assert answer.status_code == 202, answer.text
    sid = int(answer.json()["id"])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = httpx.get(f"{url}/api/v1/submissions/{sid}", headers=auth).json()["status"]
        if status == "scored":
            return sid
        time.sleep(0.2)
    raise AssertionError(f"submission {sid} not scored in 120 s: {status}")


def _promote(url: str, submission_id: int) -> None:
    """Put a submission on the official board through the admin page, as an admin does."""
    with httpx.Client(base_url=url, follow_redirects=False, timeout=60) as admin:
        token = re.search(r'name="csrf" value="([^"]+)"', admin.get("/login").text)
        assert token is not None
        form = {"username": ADMIN, "password": PASSWORD, "csrf": token.group(1), "next": "/"}
        assert admin.post("/login", data=form).status_code == 303
        token = re.search(r'name="csrf" value="([^"]+)"', admin.get("/admin").text)
        assert token is not None
        done = admin.post(
            "/admin/promote",
            data={"csrf": token.group(1), "confirm": "yes", "submission_id": str(submission_id)},
        )
        assert done.status_code == 303, done.text


def visits(site: dict[str, Any]) -> list[Visit]:
    """Every page a visitor, a submitter or an admin can open, on both benchmarks."""
    pages = [Visit("/"), Visit("/login"), Visit("/signup"), Visit("/b/no-such-benchmark/")]
    for slug in ("medvidbench", "medsg"):
        pages += [
            Visit(f"/b/{slug}/board/official"),
            Visit(f"/b/{slug}/board/community"),
            Visit(f"/b/{slug}/compare"),
            Visit(f"/b/{slug}/submit"),
            Visit(f"/b/{slug}/submit", admin=True),
            Visit(f"/b/{slug}/about"),
        ]
    video, grounding = site["video"], site["grounding"]
    pages += [
        Visit(f"/b/medvidbench/compare?entries={site['mixed']}", ready="#chart .main-svg"),
        Visit(f"/submissions/{video}", admin=True),
        Visit(f"/submissions/{grounding}", admin=True),
        Visit(f"/submissions/{grounding}/items"),
        Visit("/account", admin=True),
        Visit("/admin", admin=True),
        Visit("/api/docs", ready=".opblock"),
    ]
    return pages


def _context(browser: Any, url: str, theme: str, admin: bool, width: int = 1366) -> Any:  # noqa: F811
    # bypass_csp: axe is injected as an inline script, which the pages' CSP rightly forbids.
    context = browser.new_context(
        viewport={"width": width, "height": 900}, color_scheme=theme, bypass_csp=True
    )
    if admin:
        page = context.new_page()
        page.goto(f"{url}/login")
        page.fill("input[name=username]", ADMIN)
        page.fill("input[name=password]", PASSWORD)
        page.click("button:has-text('Log in')")
        page.wait_for_url(f"{url}/")
        page.close()
    return context


def _open(context: Any, url: str, visit: Visit) -> Any:
    page = context.new_page()
    page.goto(f"{url}{visit.path}")
    page.wait_for_load_state("networkidle")
    if visit.ready:
        page.wait_for_selector(visit.ready, timeout=30_000)
    return page


def _axe(page: Any) -> list[dict[str, Any]]:
    page.add_script_tag(path=str(AXE))
    result: list[dict[str, Any]] = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
            .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
                        where: v.nodes.slice(0, 3).map(n => n.target.join(' ')),
                        why: v.nodes.length ? v.nodes[0].failureSummary : ''}))"""
    )
    return result


@pytest.fixture(scope="module")
def axe_file() -> Path:
    if not AXE.is_file():
        message = (
            f"{AXE} is missing (./install.sh --test installs it: npm ci --prefix tests/web/axe)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return AXE


@pytest.mark.parametrize("theme", THEMES)
def test_every_page_passes_axe(
    site: dict[str, Any],
    browser: Any,  # noqa: F811
    axe_file: Path,
    theme: str,
) -> None:
    url, found = site["url"], {}
    contexts = {admin: _context(browser, url, theme, admin) for admin in (False, True)}
    for visit in visits(site):
        page = _open(contexts[visit.admin], url, visit)
        violations = _axe(page)
        if violations:
            found[visit.name] = violations
        shot(page, f"a11y-{visit.name}-{theme}")
        page.close()
    for context in contexts.values():
        context.close()
    assert found == {}, "\n".join(
        f"{name}: {v['id']} ({v['impact']}) x{v['nodes']} at {v['where']}: {v['why']}"
        for name, violations in found.items()
        for v in violations
    )


# Boxes wider than their content area that do not say above themselves that they scroll.
SILENT_BOXES = """() => [...document.querySelectorAll('main .scroll, main pre')].filter(box => {
    const hint = box.previousElementSibling;
    const says = hint && hint.classList.contains('scroll-hint') && !hint.hidden;
    const inside = box.tagName === 'PRE' && box.closest('.scroll');
    return box.scrollWidth > box.clientWidth + 1 && !says && !inside;
}).map(box => box.getAttribute('aria-label') || box.className)"""


def test_no_page_is_wider_than_a_phone(site: dict[str, Any], browser: Any) -> None:  # noqa: F811
    """At 390 px the page never scrolls sideways; a wide table scrolls inside its box, which
    says so (the submission page measured with its log open)."""
    url, wide, silent = site["url"], {}, {}
    contexts = {admin: _context(browser, url, "light", admin, width=390) for admin in (False, True)}
    for visit in visits(site):
        page = _open(contexts[visit.admin], url, visit)
        if page.locator("details#log").count():
            page.click("details#log summary")
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            wide[visit.name] = width
        if boxes := page.evaluate(SILENT_BOXES):
            silent[visit.name] = boxes
        shot(page, f"phone-{visit.name}")
        page.close()
    for context in contexts.values():
        context.close()
    assert wide == {} and silent == {}, (wide, silent)


# The pages this round changed, at a phone's and a wide screen's width, in both themes:
# screenshots for a reader, and the board's table whole at 1920 px. A laptop's width (1366 px)
# is the axe walk's above, which screenshots every page in both themes.
SIZES = (390, 1920)


@pytest.mark.parametrize("theme", THEMES)
def test_pages_at_a_phone_and_a_wide_width(site: dict[str, Any], browser: Any, theme: str) -> None:  # noqa: F811
    url = site["url"]
    chosen = [
        Visit("/b/medvidbench/board/community"),
        Visit("/b/medvidbench/board/official"),
        Visit("/b/medsg/board/community"),
        Visit("/b/medvidbench/compare"),
        Visit(f"/submissions/{site['video']}", admin=True),
        Visit(f"/submissions/{site['grounding']}", admin=True),
        Visit("/account", admin=True),
        Visit("/admin?benchmark=medsg", admin=True),
        Visit("/submissions/999999", admin=True),  # an error page, signed in
    ]
    cut = {}
    for width in SIZES:
        contexts = {admin: _context(browser, url, theme, admin, width) for admin in (False, True)}
        for visit in chosen:
            page = _open(contexts[visit.admin], url, visit)
            # MedVidBench's ten metric columns and the date fit a wide screen (MedSG-Bench's
            # board of every task may scroll inside its box, which says so)
            if width == 1920 and visit.path.startswith("/b/medvidbench/board/"):
                box = page.evaluate(
                    "() => { const t = document.querySelector('main table');"
                    " return [t.scrollWidth, t.parentElement.clientWidth]; }"
                )
                if box[0] > box[1] + 1:
                    cut[visit.name] = box
            if visit.admin:  # signed in everywhere, error pages included
                assert page.locator("header.top >> text=Log out").count() == 1, visit.path
            shot(page, f"w{width}-{visit.name}-{theme}")
            page.close()
        for context in contexts.values():
            context.close()
    assert cut == {}, f"boards wider than the window at 1920 px: {cut}"
