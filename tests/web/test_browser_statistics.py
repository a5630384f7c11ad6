"""In Chromium at 1366 px: the submit page for an anonymous visitor; intervals on a submission
page; rank intervals, tie groups and their toggle on the board; paired differences on the
compare page. Screenshots go to the CI artifacts with the other browser tests'."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.web.live import CLI, create_user, live_server
from tests.web.test_browser import browser, shot  # noqa: F401  (the shared Chromium fixture)

PASSWORD = "statistics-user-password"


@pytest.fixture(scope="module")
def stats_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("live-stats")
    create_user(data, "scientist", PASSWORD)
    token = subprocess.run(
        [*CLI, "tokens", "create", "scientist", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with live_server(data) as server:
        yield {"url": server.url, "data": data, "token": token}


def _upload(live: dict[str, Any], archetype: str, name: str) -> int:
    path = live["data"] / "demo" / "medvidbench" / f"predictions_{archetype}.json"
    with path.open("rb") as fh:
        answer = httpx.post(
            f"{live['url']}/api/v1/submissions",
            headers={"Authorization": f"Bearer {live['token']}"},
            files={"file": (path.name, fh, "application/json")},
            data={"model_name": name},
            timeout=60,
        )
    assert answer.status_code == 202, answer.text
    sid = int(answer.json()["id"])
    for _ in range(600):
        status = httpx.get(
            f"{live['url']}/api/v1/submissions/{sid}",
            headers={"Authorization": f"Bearer {live['token']}"},  # queued ones are private
        ).json()["status"]
        if status == "scored":
            return sid
        time.sleep(0.1)
    raise AssertionError(f"submission {sid} not scored: {status}")


def test_anonymous_visitors_read_how_to_submit(stats_live: dict[str, Any], browser: Any) -> None:  # noqa: F811
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{stats_live['url']}/b/medvidbench/submit")
    assert page.locator("#example pre").is_visible()
    assert "medvidbench validate" in page.locator("#validator").inner_text()
    assert page.locator("input[type=file]").count() == 0
    shot(page, "submit-anonymous")
    page.click("text=Log in to submit")
    page.wait_for_url("**/login?next=/b/medvidbench/submit")
    page.fill("input[name=username]", "scientist")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/b/medvidbench/submit")
    assert page.locator("input[type=file]").count() == 1  # now the form
    page.close()


def test_intervals_rank_intervals_and_differences_in_the_browser(
    stats_live: dict[str, Any],
    browser: Any,  # noqa: F811
) -> None:
    strong = _upload(stats_live, "strong", "Interval Strong")
    _upload(stats_live, "shuffled", "Interval Shuffled")
    _upload(stats_live, "weak", "Interval Weak")
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{stats_live['url']}/submissions/{strong}")
    assert page.locator("#metrics-table th:has-text('95 % interval')").is_visible()
    assert "1000 replicates" in page.locator("#interval-note").inner_text()
    shot(page, "submission-intervals")

    page.goto(f"{stats_live['url']}/b/medvidbench/board/community")
    cis = page.locator("table#board .rank-ci")
    assert cis.count() == 3 and cis.first.is_visible()
    groups = page.locator("table#board tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.tieGroup)"
    )
    assert groups[0] == groups[1] != groups[2]  # strong and shuffled are tied
    shot(page, "board-rank-intervals")
    page.click("#intervals-toggle")
    page.wait_for_url("**intervals=off")
    assert page.locator("table#board .rank-ci").count() == 0
    page.click("#intervals-toggle")
    page.wait_for_selector("table#board .rank-ci")

    page.goto(f"{stats_live['url']}/b/medvidbench/board/official")
    reported = page.locator("table#board .rank-ci.none").first
    assert reported.inner_text() == "(n/a)"
    assert "reported numbers" in (reported.get_attribute("title") or "")

    rows = httpx.get(f"{stats_live['url']}/api/v1/boards/community").json()
    ids = ",".join(str(r["entry_id"]) for r in rows)
    page.goto(f"{stats_live['url']}/b/medvidbench/compare?entries={ids}")
    assert page.locator("#differences").is_visible()
    assert page.locator(".identical").count() >= 7  # strong and shuffled: the same answers
    shot(page, "compare-differences")
    page.wait_for_selector("#chart .main-svg", timeout=30_000)  # from the benchmark's own API
    assert "metric" in page.locator("#chart").inner_text()  # the x axis is named

    # The searchable list: typing filters it at once; ticked entries stay.
    page.goto(f"{stats_live['url']}/b/medvidbench/compare")
    assert page.locator("#compare-default").is_visible()  # never empty: the top 3
    visible = page.locator("#pick-list label.pick:visible")
    everyone = visible.count()
    page.fill("#pick-filter", "interval w")
    assert 1 <= visible.count() < everyone
    assert "Interval Weak" in page.locator("#pick-list").inner_text()
    shot(page, "compare-picker")
    page.fill("#pick-filter", "")
    for label in page.locator("#pick-list label.pick").all():  # exactly these two ticked
        wanted = any(name in label.inner_text() for name in ("Interval Strong", "Interval Weak"))
        label.locator("input").set_checked(wanted)
    page.click("#compare-form button:has-text('Compare')")
    page.wait_for_selector("#compare-table")
    headers = page.locator("#compare-table thead th").all_inner_texts()
    assert [h.splitlines()[0] for h in headers[1:]] == ["Interval Strong", "Interval Weak"]
    assert all("scored here" in h for h in headers[1:])  # where each entry's numbers come from
    page.close()


def test_the_board_fits_the_screen(stats_live: dict[str, Any], browser: Any) -> None:  # noqa: F811
    """At 1366 and 1920 px the official board (10 metrics) needs no scrolling; on a phone the
    table scrolls inside its box, the page does not, and the model column stays in view."""
    geometry = """() => {
        const t = document.querySelector('table#board'), box = t.parentElement;
        return {table: t.scrollWidth, box: box.clientWidth,
                page: document.documentElement.scrollWidth, view: window.innerWidth};
    }"""
    for width in (1366, 1920):
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(f"{stats_live['url']}/b/medvidbench/board/official")
        g = page.evaluate(geometry)
        assert g["table"] <= g["box"] and g["page"] <= g["view"], (width, g)
        shot(page, f"board-fits-{width}")
        page.close()
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    phone.goto(f"{stats_live['url']}/b/medvidbench/board/official")
    g = phone.evaluate(geometry)
    assert g["page"] <= g["view"] < g["table"]  # only the table scrolls
    phone.evaluate(
        "() => { document.querySelector('table#board').parentElement.scrollLeft = 400; }"
    )
    model = phone.locator("table#board tbody tr:not(.section) td.model").first.bounding_box()
    box = phone.evaluate(
        "() => document.querySelector('table#board').parentElement.getBoundingClientRect().left"
    )
    assert model is not None and abs(model["x"] - box) <= 1  # sticky: still at the left edge
    shot(phone, "board-phone-scrolled")
    phone.close()


def test_a_private_run_in_the_browser(stats_live: dict[str, Any], browser: Any) -> None:  # noqa: F811
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{stats_live['url']}/login?next=/b/medvidbench/submit")
    page.fill("input[name=username]", "scientist")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/b/medvidbench/submit")
    page.fill("input[name=model_name]", "Quiet Run")
    page.check("input[name=visibility][value=private]")
    page.set_input_files(
        "input[name=file]",
        str(stats_live["data"] / "demo" / "medvidbench" / "predictions_format-noisy.json"),
    )
    page.click("form button:has-text('Submit')")
    page.wait_for_url("**/submissions/*")
    page.wait_for_selector("#timeline[data-status=scored]", timeout=60_000)
    assert "would rank" in page.locator("#would-rank").inner_text()
    board = httpx.get(f"{stats_live['url']}/api/v1/boards/community").json()
    assert "Quiet Run" not in [r["model_name"] for r in board]
    shot(page, "private-run")
    page.click("button:has-text('Publish')")
    page.wait_for_selector("#notice")
    assert "public" in page.locator("#notice").inner_text()
    board = httpx.get(f"{stats_live['url']}/api/v1/boards/community").json()
    assert "Quiet Run" in [r["model_name"] for r in board]
    page.close()


def test_earlier_polish_in_the_browser(stats_live: dict[str, Any], browser: Any) -> None:  # noqa: F811
    """Reported rows' dates (7), one message for a ground-truth upload (12), why samples were
    not scored (13), the About page's links, wrapping citation and reported sources (15)."""
    url = stats_live["url"]
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{url}/b/medvidbench/board/official")
    headers = page.locator("table#board thead tr:not(.groups) th").all_inner_texts()
    assert "Date" in headers and "Verified" not in headers
    today = time.strftime("%Y-%m-%d", time.gmtime())
    dates = page.locator("table#board tbody tr:not(.section) td.date").all_inner_texts()
    assert today not in dates  # a reported row shows its source's date, or nothing
    page.locator("table#board a.source").first.click()
    page.wait_for_url("**/about#reported")
    assert page.locator("#reported").is_visible()
    for name in ("Paper", "Dataset", "Code"):
        assert page.locator("a", has_text=name).count() >= 1, name
    fits = page.evaluate(
        "() => { const c = document.querySelector('pre.cite');"
        " return c.scrollWidth <= c.clientWidth + 1; }"
    )
    assert fits  # the citation wraps instead of overflowing
    shot(page, "about-sources")

    page.goto(f"{url}/login?next=/b/medvidbench/submit")
    page.fill("input[name=username]", "scientist")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/b/medvidbench/submit")
    page.fill("input[name=model_name]", "Not Predictions")
    page.set_input_files(
        "input[name=file]", str(stats_live["data"] / "demo" / "medvidbench" / "ground_truth.json")
    )
    page.click("form button:has-text('Submit')")
    page.wait_for_selector("#problems")
    assert page.locator("#problems li").count() == 1
    assert "this looks like a ground-truth file" in page.locator("#problems").inner_text()
    shot(page, "submit-ground-truth")

    page.fill("input[name=model_name]", "Word Salad")
    page.set_input_files(
        "input[name=file]",
        str(stats_live["data"] / "demo" / "medvidbench" / "predictions_garbage.json"),
    )
    page.click("form button:has-text('Submit')")
    page.wait_for_url("**/submissions/*")
    page.wait_for_selector("#timeline[data-status=scored]", timeout=60_000)
    reasons = " ".join(page.locator("small.why").all_inner_texts())
    assert "not scored: reference label not in the class list" in reasons  # NAP's, as asked
    assert "not scored: no N/5 score found" in reasons
    shot(page, "submission-not-scored")
    page.close()
