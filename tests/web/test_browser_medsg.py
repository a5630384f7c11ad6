"""MedSG-Bench in a real browser beside MedVidBench, on one ``medvidbench serve``: the official
script's results files submitted through the web form and through the CLI, both ranked
on the MedSG-Bench board; screenshots under ``artifacts/screenshots``."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.live import CLI, create_user, live_server
from tests.web.test_browser import browser, shot  # noqa: F401  (the shared Chromium fixture)

PASSWORD = "grounder-password-1"


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("both")
    create_user(data, "grounder", PASSWORD)
    with live_server(data, env={"MEDVIDBENCH_BENCHMARKS": ""}) as server:  # every benchmark
        yield {"url": server.url, "data": data}


def test_medsg_results_files_by_web_form_and_by_cli(
    both: dict[str, Any],
    browser: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    url, demo = both["url"], both["data"] / "demo" / "medsg"
    page = browser.new_page()
    page.goto(url)
    assert page.locator("h1").inner_text() == "Benchmarks on this server"
    assert (
        page.locator("a[href='/b/medsg/']").count()
        and page.locator("a[href='/b/medvidbench/']").count()
    )
    shot(page, "benchmarks")
    page.goto(f"{url}/login")
    page.fill("input[name=username]", "grounder")
    page.fill("input[name=password]", PASSWORD)
    page.click("button:has-text('Log in')")
    page.goto(f"{url}/b/medsg/submit")
    assert "MedSG-Bench test set" in page.content()
    page.fill("input[name=model_name]", "Qwen results file")
    page.set_input_files("input[name=file]", str(demo / "results_strong.json"))
    page.click("button:has-text('Submit')")
    page.wait_for_url("**/submissions/*")
    page.wait_for_selector("#timeline[data-status=scored]", timeout=60_000)
    assert "Overall Acc@0.5" in page.content() and "Referring mIoU" in page.content()
    shot(page, "medsg-submission")
    page.click("#browse-items")
    page.wait_for_url("**/items")
    assert page.locator("#items tbody tr").count() == 50  # a page of the first task's items
    assert page.locator("#items svg rect.truth").count() == 50
    shot(page, "medsg-items")
    page.select_option("select[name=task]", "referring")
    page.select_option("select[name=bucket]", "0.7-1")
    page.click("button:has-text('Show')")
    page.wait_for_url("**task=referring**")
    values = [float(v) for v in page.locator("#items tbody td.num").all_inner_texts()]
    assert values and all(v >= 0.7 for v in values)

    token = subprocess.run(
        [*CLI, "tokens", "create", "grounder", "--data-dir", str(both["data"])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    sent = subprocess.run(
        [
            *CLI,
            "submit",
            str(demo / "predictions_qwen-json.json"),
            "--server",
            url,
            "--token",
            token,
            "--model-name",
            "Qwen JSON",
            "--benchmark",
            "medsg",
            "--wait",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sent.returncode == 0, sent.stderr
    page.goto(f"{url}/b/medsg/board/community")
    rows = page.locator("table#board tbody tr")
    assert rows.count() == 2
    assert "Qwen results file" in rows.nth(0).inner_text()  # 0.83 Acc@0.5 overall
    assert "Qwen JSON" in rows.nth(1).inner_text()  # 0.66
    first = rows.nth(0).inner_text()
    assert "open labels" in first  # every entry of a public-label benchmark says so
    assert "%" in first  # MedSG-Bench's metrics are shown as percentages, as the paper does
    assert "Overall Acc@0.5" in page.locator("table#board thead").inner_text()
    shot(page, "medsg-board")
    page.evaluate("document.documentElement.dataset.theme = 'dark'")
    style = page.evaluate(
        """() => ['td.best', 'td.second'].map(s => {
            const c = getComputedStyle(document.querySelector(s));
            return [c.color, c.textDecorationLine];
        })"""
    )
    (best_colour, best_line), (second_colour, second_line) = style
    assert best_colour != second_colour and best_line == "none" and second_line == "underline"
    shot(page, "medsg-board-dark")
    page.goto(f"{url}/b/medsg/about")
    assert "Open labels" in page.content()
    page.goto(f"{url}/b/medvidbench/board/community")
    assert page.locator("table#board tbody tr").count() == 0  # MedVidBench's board is its own
