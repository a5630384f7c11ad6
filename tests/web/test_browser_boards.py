"""Boards and compare as a researcher uses them, in Chromium: a column chooser kept in the URL,
sort marks on every sortable header, filters that apply as they change (and an Apply button
without JS), names never broken at "_", a sticky header and model column on a phone, a filter
that says it filters, and compare warning when it mixes reported and demo-scored entries.
Screenshots go to the CI artifacts with the other browser tests'."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.test_browser import browser, shot  # noqa: F401  (the shared Chromium fixture)
from tests.web.test_browser_accessibility import site_with_uploads

# Every metric-name fragment that holds "_" lies on one line (no break inside a name).
UNBROKEN = """() => {
    const range = (el, from, to) => {  // a range over the text, across its text nodes
        const r = document.createRange(), walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        let at = 0, node, started = false;
        while ((node = walk.nextNode())) {
            if (!started && from < at + node.length) { r.setStart(node, from - at); started = true; }
            if (to <= at + node.length) { r.setEnd(node, to - at); break; }
            at += node.length;
        }
        return r;
    };
    return [...document.querySelectorAll('table#board .metric-name')].filter(span => {
        const text = span.textContent;
        return text.split(/[ @]/).filter(w => w.includes('_')).some(word => {
            const from = text.indexOf(word);
            const rects = [...range(span, from, from + word.length).getClientRects()];
            return new Set(rects.map(r => Math.round(r.top))).size > 1;
        });
    }).map(span => span.textContent);
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from site_with_uploads(tmp_path_factory.mktemp("boards"))


def _metrics(url: str, slug: str) -> list[dict[str, Any]]:
    body = httpx.get(f"{url}/api/v1/benchmarks/{slug}/metrics").json()
    return list(body["metrics"] if isinstance(body, dict) else body)


def test_column_chooser_sort_marks_and_live_filters(site: dict[str, Any], browser: Any) -> None:  # noqa: F811
    url = site["url"]
    metrics = _metrics(url, "medsg")
    default = [m for m in metrics if m.get("board", True)]
    extra = next(m for m in metrics if not m.get("board", True))  # hidden by default
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{url}/b/medsg/board/community")
    titles = page.locator("table#board thead tr.titles th.sortable")
    assert titles.count() == len(default) < len(metrics)
    summary = page.locator("#column-chooser summary").inner_text()
    assert f"{len(default)} of {len(metrics)}" in summary
    # every sortable header shows that it sorts
    marks = page.locator("table#board th.sortable .sort-mark")
    assert marks.count() == titles.count() and marks.first.is_visible()
    assert set(marks.all_inner_texts()) == {"⇅"}
    assert page.locator("#apply-filters").is_hidden()  # filters apply by themselves
    page.evaluate("window.stillHere = true")  # a full page load would forget it
    page.click("#column-chooser summary")
    page.check(f"#column-chooser input[value='{extra['key']}']")
    page.wait_for_selector(f"table#board thead th.sortable >> text={extra['column']}")
    assert f"col={extra['key']}" in page.url
    assert page.locator("table#board thead th.sortable").count() == len(default) + 1
    assert extra["column"] in page.locator("table#board thead").inner_text()
    assert page.evaluate("window.stillHere") is True
    shot(page, "board-column-chooser")
    page.reload()  # the URL keeps the columns
    assert page.locator("table#board thead th.sortable").count() == len(default) + 1
    page.locator("table#board th.sortable a").first.click()
    page.wait_for_selector("table#board th[aria-sort=descending] .sort-mark:text('▼')")
    assert f"col={extra['key']}" in page.url  # sorting keeps the chosen columns
    page.evaluate("window.stillHere = true")
    page.fill("input[name=q]", "no model is called this")
    page.wait_for_selector("#board-empty")
    assert "No entry matches these filters" in page.locator("#board-empty").inner_text()
    assert page.evaluate("window.stillHere") is True and "q=no+model" in page.url
    page.fill("input[name=q]", "")
    page.wait_for_selector("table#board")
    page.click("#column-chooser summary")  # closed again since the reload
    page.uncheck(f"#column-chooser input[value='{extra['key']}']")  # back to the default
    page.wait_for_selector(
        f"table#board thead th.sortable >> text={extra['column']}", state="detached"
    )
    assert page.locator("table#board thead th.sortable").count() == len(default)
    assert "col=" not in page.url  # the default columns need no mention in the address
    page.close()

    # Without JS the same form works with its button.
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1366, "height": 900}
    )
    plain = context.new_page()
    plain.goto(f"{url}/b/medsg/board/community")
    assert plain.locator("#apply-filters").is_visible()
    plain.fill("input[name=q]", "zzz")
    plain.click("#apply-filters")
    plain.wait_for_selector("#board-empty")
    context.close()


def test_names_unbroken_and_phone_header_and_model_sticky(
    site: dict[str, Any],
    browser: Any,  # noqa: F811
) -> None:
    url = site["url"]
    for width in (1366, 1920):
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(f"{url}/b/medvidbench/board/official")
        assert page.evaluate(UNBROKEN) == [], width
        page.close()
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    phone.goto(f"{url}/b/medvidbench/board/official")
    assert phone.evaluate(UNBROKEN) == []
    assert phone.locator(".scroll-hint").first.is_visible()  # says that it scrolls
    box = phone.locator("table#board").locator("xpath=..")
    box.evaluate("b => { b.scrollTop = 600; b.scrollLeft = 400; }")
    edge = box.bounding_box()
    header = phone.locator("table#board thead tr.titles th.sortable").first.bounding_box()
    model = phone.locator("table#board tbody tr:not(.section) td.model").nth(5).bounding_box()
    assert edge and header and model
    assert abs(header["y"] - edge["y"]) <= 1  # the header row stays at the top of the box
    assert abs(model["x"] - edge["x"]) <= 1  # the model column at its left edge
    shot(phone, "board-phone-sticky")
    phone.close()


def test_the_every_metric_filter_says_what_it_does(site: dict[str, Any], browser: Any) -> None:  # noqa: F811
    url = site["url"]
    total = len(_metrics(url, "medvidbench"))  # from the benchmark's definition
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{url}/b/medvidbench/board/community")
    label = page.locator("label:has(#only-complete)")
    assert label.inner_text().strip() == f"entries with all {total} metrics"
    assert "Show only" in page.locator("fieldset.only legend").inner_text()
    page.check("#only-complete")  # no judge here: no entry has the judged metric
    page.wait_for_selector("#board-empty")
    empty = page.locator("#board-empty").inner_text()
    assert f"No entry has all {total} metrics" in empty and "No entries yet" not in empty
    shot(page, "board-complete-filter-empty")
    page.click("#board-empty a:has-text('Clear the filter')")
    page.wait_for_selector("table#board")
    assert page.locator("table#board tbody tr").count() == 1
    page.close()


def test_compare_warns_when_it_mixes_test_sets(site: dict[str, Any], browser: Any) -> None:  # noqa: F811
    url = site["url"]
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{url}/b/medvidbench/compare?entries={site['mixed']}")
    warning = page.locator("#compare-mixed")
    assert warning.is_visible()
    assert "Not comparable" in warning.inner_text() and "demo test set" in warning.inner_text()
    headers = page.locator("#compare-table thead th").all_inner_texts()
    assert any("reported" in h for h in headers) and any("demo" in h for h in headers)
    page.wait_for_selector("#chart .main-svg", timeout=30_000)
    legend = page.locator("#chart .legendtext").all_text_contents()
    assert any("reported" in t for t in legend) and any("demo" in t for t in legend)
    shot(page, "compare-mixed")

    page.goto(f"{url}/b/medvidbench/compare")  # the default: three reported entries
    assert page.locator("#compare-mixed").count() == 0
    why = page.locator("#no-differences").inner_text()
    assert "reported" in why and "no per-item results" in why
    shot(page, "compare-default-no-differences")
    page.close()


def test_a_model_name_is_text_in_the_compare_chart(site: dict[str, Any], browser: Any) -> None:  # noqa: F811
    """Plotly reads a trace's name as markup: a model name with a link and a style must show as
    the characters it is, not as a live link (a security review's phishing link in the legend).
    Last in this file: it adds an entry to the module's shared site."""
    url = site["url"]
    name = (
        'M <a href="https://evil.example/x">LOGIN AGAIN</a><span style="font-size:50px">BIG</span>'
    )
    demo = Path(site["data"]) / "demo" / "medvidbench" / "predictions_strong.json"
    answer = httpx.post(
        f"{url}/api/v1/submissions",
        headers={"Authorization": f"Bearer {site['token']}"},
        files={"file": ("p.json", demo.read_bytes() + b"\n", "application/json")},
        data={"model_name": name},
        timeout=60,
    )
    assert answer.status_code == 202, answer.text
    for _ in range(600):  # scored in the background: until its entry is on the board
        rows = httpx.get(f"{url}/api/v1/boards/community").json()
        if any(r["model_name"] == name for r in rows):
            break
        time.sleep(0.1)
    assert len(rows) >= 2 and any(r["model_name"] == name for r in rows), rows
    entries = ",".join(str(r["entry_id"]) for r in rows)
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{url}/b/medvidbench/compare?entries={entries}")
    page.wait_for_selector("#chart .main-svg", timeout=30_000)
    legend = page.locator("#chart .legendtext").all_text_contents()
    assert any("<a href=" in t and "</span>" in t for t in legend), legend
    assert page.locator("#chart a").count() == 0
    assert (
        page.locator('#chart [style*="font-size:50px"], #chart [style*="font-size: 50px"]').count()
        == 0
    )
    page.close()
