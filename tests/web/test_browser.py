"""A real browser (Playwright + Debian's /usr/bin/chromium) against a real ``medvidbench serve``.

Screenshots of the main pages are saved under ``artifacts/screenshots`` (or
``$MEDVIDBENCH_ARTIFACTS/screenshots``). Without Chromium these tests are skipped on a
developer's machine and fail under CI=true.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.live import create_user, live_server

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("MEDVIDBENCH_ARTIFACTS", "artifacts")) / "screenshots"
ADMIN_PASSWORD = "browser-admin-password"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("live")
    create_user(data, "boss", ADMIN_PASSWORD, "--admin")
    with live_server(data) as server:
        yield {"url": server.url, "data": data, "startup": server.startup}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
            ],
        )
        yield b
        b.close()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_server_starts(live: dict[str, Any]) -> None:
    """The first start generates the demo set and migrates the database, and answers; how long
    it takes is measured by bench/bench_first_run.py (docs/performance.md), not here, where the
    suite's parallel processes share the machine."""
    assert 0 < live["startup"] < 120  # it started, and did not hang


def test_newcomer_path(live: dict[str, Any], browser: Any, tmp_path: Path) -> None:
    page = browser.new_page(accept_downloads=True)
    page.goto(live["url"])
    assert page.locator("h1").inner_text() == "Official leaderboard"
    assert page.locator("table#board tbody tr:not(.section)").count() == 19
    shot(page, "official-board")
    page.click("text=Sign up")
    page.fill("input[name=username]", "newcomer")
    page.fill("input[name=password]", "newcomer-password-1")
    page.fill("input[name=team]", "Newcomer Lab")
    page.click("button:has-text('Create account')")
    page.wait_for_url("**/account")
    assert "Your account is ready" in page.locator("#notice").inner_text()
    assert "Newcomer Lab" in page.locator("#team-state").inner_text()
    page.click("button:has-text('Create token')")
    token = page.locator("#new-token").inner_text()
    assert token.startswith("mvb_")
    shot(page, "account")
    page.goto(f"{live['url']}/b/medvidbench/submit")
    assert "5 of 5 submissions left for the day" in page.locator("#quota-left").inner_text()
    assert page.input_value("input[name=organisation]") == "Newcomer Lab"  # the team, prefilled
    page.fill("input[name=model_name]", "Browser Strong")
    page.set_input_files(
        "input[name=file]", str(live["data"] / "demo" / "medvidbench" / "predictions_strong.json")
    )
    shot(page, "submit")
    page.click("button:has-text('Submit')")
    page.wait_for_url("**/submissions/*")
    page.wait_for_selector("#timeline[data-status=scored]", timeout=60_000)  # live update
    assert "TAG_mIoU@0.3" in page.content()
    page.click("#log summary")  # the submission's log, with times
    log = page.locator("#log table").inner_text()
    assert "received" in log and "validated: valid" in log and "scored (" in log
    shot(page, "submission")
    page.goto(f"{live['url']}/b/medvidbench/board/community")
    row = page.locator("table#board tbody tr").first
    assert "Browser Strong" in row.inner_text() and "not judged" in row.inner_text()  # no judge
    shot(page, "community-board")
    with page.expect_download() as download:
        page.click("text=CSV")
    csv_text = Path(download.value.path()).read_text()
    assert csv_text.startswith("rank,model") and "Browser Strong" in csv_text
    assert download.value.suggested_filename.startswith("medvidbench-community-")
    with page.expect_download() as json_download:  # JSON downloads too, not a raw tab
        page.click("text=JSON")
    assert json_download.value.suggested_filename.endswith(".json")
    board_json = json.loads(Path(json_download.value.path()).read_text())
    assert board_json[0]["model_name"] == "Browser Strong"
    entries = httpx.get(f"{live['url']}/api/v1/boards/community").json()
    official = httpx.get(f"{live['url']}/api/v1/boards/official").json()
    page.goto(
        f"{live['url']}/b/medvidbench/compare?entries={entries[0]['entry_id']},{official[0]['entry_id']}"
    )
    page.wait_for_selector("#chart .main-svg", timeout=30_000)  # plotly, served locally
    assert page.locator("#compare-table thead th").count() == 3
    shot(page, "compare")
    page.goto(f"{live['url']}/b/medvidbench/about")
    shot(page, "about")

    # The same server through the command line: identical scores to the offline evaluator.
    predictions = live["data"] / "demo" / "medvidbench" / "predictions_weak.json"
    ground_truth = live["data"] / "demo" / "medvidbench" / "ground_truth.json"
    cli = [sys.executable, "-m", "medvidbench"]
    sent = subprocess.run(
        [
            *cli,
            "submit",
            str(predictions),
            "--server",
            live["url"],
            "--token",
            token,
            "--model-name",
            "CLI Weak",
            "--wait",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sent.returncode == 0, sent.stderr
    # the default quota is 5 per day: the browser's submission and this one leave 3
    assert "quota: 3 of 5 submissions left for the day" in sent.stderr
    offline = subprocess.run(
        [*cli, "evaluate", str(predictions), "--ground-truth", str(ground_truth), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads(offline.stdout)["metrics"]
    board = httpx.get(f"{live['url']}/api/v1/boards/community").json()
    assert next(r for r in board if r["model_name"] == "CLI Weak")["metrics"] == expected
    form = next(r for r in board if r["model_name"] == "Browser Strong")["metrics"]
    strong = subprocess.run(
        [
            *cli,
            "evaluate",
            str(live["data"] / "demo" / "medvidbench" / "predictions_strong.json"),
            "--ground-truth",
            str(ground_truth),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert form == json.loads(strong.stdout)["metrics"]
    page.close()


def _strong_on_the_community_board(live: dict[str, Any]) -> None:
    """The scored "Browser Strong" the admin promotes: the newcomer's (this file in order), or,
    when the admin path runs alone, the same file sent here through the command line."""
    board = httpx.get(f"{live['url']}/api/v1/boards/community").json()
    if any(r["model_name"] == "Browser Strong" for r in board):
        return
    create_user(live["data"], "admin-path", "admin-path-password-1")
    cli = [sys.executable, "-m", "medvidbench"]
    data = ["--data-dir", str(live["data"])]
    token = subprocess.run(
        [*cli, "tokens", "create", "admin-path", *data], capture_output=True, text=True, check=True
    ).stdout.strip()
    predictions = live["data"] / "demo" / "medvidbench" / "predictions_strong.json"
    sent = subprocess.run(
        [
            *cli,
            "submit",
            str(predictions),
            *("--server", live["url"], "--token", token),
            *("--model-name", "Browser Strong", "--wait"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sent.returncode == 0, sent.stderr


def test_admin_path(live: dict[str, Any], browser: Any) -> None:
    _strong_on_the_community_board(live)
    page = browser.new_page()
    page.goto(f"{live['url']}/login")
    page.fill("input[name=username]", "boss")
    page.fill("input[name=password]", ADMIN_PASSWORD)
    page.click("button:has-text('Log in')")
    page.goto(f"{live['url']}/admin")
    shot(page, "admin")
    row = (
        page.locator("tr", has_text="Browser Strong")
        .filter(has=page.locator("button:has-text('Promote')"))
        .first
    )
    asked: list[str] = []  # one confirmation per action: the browser's dialog
    page.on("dialog", lambda d: (asked.append(d.message), d.accept()))
    row.locator("button:has-text('Promote')").click()
    page.wait_for_url("**/admin?benchmark=medvidbench#official")  # back where the admin was
    assert "is on the official medvidbench board" in page.locator("#notice").inner_text()
    page.goto(f"{live['url']}/b/medvidbench/board/official")
    promoted = page.locator("table#board tbody tr", has_text="Browser Strong")
    assert "verified" in promoted.inner_text()
    # demo data: the promoted demo score is ranked apart from the reported real results
    assert (
        "Scored here, on the synthetic demo test set"
        in page.locator("#section-demo-scored").inner_text()
    )
    assert page.locator("#section-demo-reported").is_visible()
    shot(page, "official-board-demo-sections")
    page.goto(f"{live['url']}/admin")
    reported = page.locator("tr", has_text="Qwen3.5-4B").first
    reported.locator("button:has-text('Remove')").click()
    page.wait_for_url("**/admin?benchmark=medvidbench#official")
    assert asked[0].startswith("Put submission") and asked[1].startswith("Take entry")
    assert "is off the official medvidbench board" in page.locator("#notice").inner_text()
    shot(page, "admin-confirmation")
    audit = page.locator("#audit").inner_text()
    assert "entry.promote" in audit and "entry.remove" in audit
    page.goto(f"{live['url']}/b/medvidbench/board/official")
    assert "Qwen3.5-4B" not in page.locator("table#board").inner_text()
    page.close()


def test_api_docs_render_offline_and_pages_log_no_errors(
    live: dict[str, Any], browser: Any
) -> None:
    """Swagger UI comes from this server (the CSP blocks any CDN); no page logs an error."""
    page = browser.new_page()
    errors: list[str] = []
    page.on(
        "console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
    outside: list[str] = []
    page.on(
        "request",
        lambda r: outside.append(r.url) if not r.url.startswith((live["url"], "data:")) else None,
    )
    page.goto(f"{live['url']}/api/docs")
    page.wait_for_selector(".opblock", timeout=30_000)
    operations = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/v1/submissions" in " ".join(operations) and len(operations) >= 8
    shot(page, "api-docs")
    for path in (
        "/",
        "/b/medvidbench/board/community",
        "/b/medvidbench/about",
        "/login",
        "/signup",
        "/b/medvidbench/compare",
    ):
        page.goto(f"{live['url']}{path}")
        page.wait_for_load_state("networkidle")
    assert errors == [] and outside == []
    page.close()
