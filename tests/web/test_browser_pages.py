"""A researcher's and an admin's journeys in Chromium on one ``medvidbench serve`` hosting both
benchmarks: the token page after a reload, the submit form's radios, the submission record
(warnings, evaluations, the report download), the admin's actions, the visibility sentence and
MedSG-Bench's wording. Screenshots at 390, 1366 and 1920 px under ``artifacts/screenshots``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.live import create_user, live_server
from tests.web.test_browser import ARTIFACTS, browser  # noqa: F401  (the shared Chromium)

ADMIN, RESEARCHER = "boss", "rita"
PASSWORD = "journey-password-123"
WIDTHS = (390, 1366, 1920)
ORDER_WARNING = "matched to their test question by order alone"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("journeys")
    create_user(data, ADMIN, PASSWORD, "--admin")
    create_user(data, RESEARCHER, PASSWORD)
    env = {"MEDVIDBENCH_BENCHMARKS": "", "MEDVIDBENCH_QUOTA_PER_DAY": "0"}
    with live_server(data, env=env) as server:
        yield {"url": server.url, "data": data, "state": {}}


def shots(page: Any, name: str) -> None:
    """The page at each width, full length."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1366, "height": 900})


def logged_in(browser: Any, live: dict[str, Any], name: str) -> Any:  # noqa: F811
    page = browser.new_context(accept_downloads=True).new_page()
    page.goto(f"{live['url']}/login")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("button:has-text('Log in')")
    page.wait_for_url(lambda url: "/login" not in url)
    return page


def _token(live: dict[str, Any], browser: Any) -> str:  # noqa: F811
    if "token" not in live["state"]:
        page = logged_in(browser, live, RESEARCHER)
        page.goto(f"{live['url']}/account")
        page.click("button:has-text('Create token')")
        page.wait_for_url("**/account#tokens")
        live["state"]["token"] = page.locator("#new-token").inner_text()
        live["state"]["account"] = page
    return str(live["state"]["token"])


def _upload(live: dict[str, Any], token: str, slug: str, file: Path, name: str) -> int:
    with file.open("rb") as fh:
        made = httpx.post(
            f"{live['url']}/api/v1/benchmarks/{slug}/submissions",
            headers={"Authorization": f"Bearer {token}"},
            files={"file": (file.name, fh, "application/json")},
            data={"model_name": name},
            timeout=120,
        )
    assert made.status_code == 202, made.text
    return int(made.json()["id"])


def _until(live: dict[str, Any], token: str, sid: int, ready: Any) -> dict[str, Any]:
    """The submission's API answer once ``ready(answer)`` holds (scoring runs in the server)."""
    deadline = time.monotonic() + 120
    while True:
        body = httpx.get(
            f"{live['url']}/api/v1/submissions/{sid}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        ).json()
        if ready(body):
            return dict(body)
        assert time.monotonic() < deadline, f"submission {sid} never got there: {body['status']}"
        time.sleep(0.3)


def test_a_new_token_survives_a_reload_without_a_second_one(
    live: dict[str, Any],
    browser: Any,  # noqa: F811
) -> None:
    token = _token(live, browser)
    assert token.startswith("mvb_")
    page = live["state"]["account"]
    assert page.url.endswith("/account#tokens")  # the browser is on a GET, not the POST
    page.reload()
    assert page.locator("#new-token").count() == 0  # shown once
    assert page.locator("form[action$='/revoke']").count() == 1  # and made once
    page.goto(f"{live['url']}/account/tokens")  # the address itself: no Method Not Allowed
    assert page.url.endswith("/account#tokens") and page.locator("h2#tokens").is_visible()
    shots(page, "account-tokens")


def test_the_visibility_radios_sit_beside_their_labels(
    live: dict[str, Any],
    browser: Any,  # noqa: F811
) -> None:
    page = logged_in(browser, live, RESEARCHER)
    page.goto(f"{live['url']}/b/medvidbench/submit")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for label in page.locator("#visibility label").all():
            where = label.evaluate(
                """(label) => {
                  const radio = label.querySelector("input").getBoundingClientRect();
                  const range = document.createRange();
                  range.selectNodeContents(label);
                  const text = [...range.getClientRects()]
                    .filter((r) => r.width > 0 && r.left >= radio.right - 1)[0];
                  return {radioLeft: radio.left, radioRight: radio.right,
                          radioMid: (radio.top + radio.bottom) / 2,
                          textLeft: text.left, textTop: text.top, textBottom: text.bottom,
                          labelLeft: label.getBoundingClientRect().left};
                }"""
            )
            assert where["textLeft"] >= where["radioRight"], (width, where)  # beside it
            assert where["textTop"] <= where["radioMid"] <= where["textBottom"], (width, where)
            assert where["radioLeft"] - where["labelLeft"] < 4, (width, where)  # not centred
    page.set_viewport_size({"width": 1366, "height": 900})
    shots(page, "submit-form")


def test_the_submission_page_holds_the_whole_record(
    live: dict[str, Any],
    browser: Any,  # noqa: F811
) -> None:
    token = _token(live, browser)
    demo = live["data"] / "demo" / "medvidbench"
    sid = _upload(live, token, "medvidbench", demo / "predictions_shuffled.json", "Record Shuffled")
    _until(live, token, sid, lambda b: b["status"] == "scored")
    admin = logged_in(browser, live, ADMIN)
    admin.goto(f"{live['url']}/admin")
    row = admin.locator(f"tr[data-submission='{sid}']")
    row.locator("select[name=profile]").select_option("strict-v2")
    asked: list[str] = []
    admin.once("dialog", lambda d: (asked.append(d.message), d.accept()))
    row.locator("button:has-text('Re-score')").click()
    admin.wait_for_url("**/admin?benchmark=medvidbench#submissions")
    assert asked == [f"Re-score submission {sid} under the profile strict-v2?"]
    _until(live, token, sid, lambda b: len(b["evaluations"]) == 2)

    page = logged_in(browser, live, RESEARCHER)
    page.goto(f"{live['url']}/submissions/{sid}")
    assert ORDER_WARNING in page.locator("#warnings li").first.inner_text()
    rows = page.locator("#evaluations tbody tr")
    assert rows.count() == 2 and "strict-v2" in rows.nth(1).inner_text()
    page.click("#log summary")
    assert "re-scored (strict-v2" in page.locator("#log table").inner_text()
    shots(page, "submission-record")
    rows.nth(1).locator("a:has-text('show')").click()
    page.wait_for_url("**?evaluation=*")
    assert "strict-v2" in page.locator("#shown-evaluation").inner_text()
    assert "not the evaluation the boards use" in page.locator("#shown-evaluation").inner_text()
    with page.expect_download() as download:
        page.click("#download-report")
    assert download.value.suggested_filename == f"submission-{sid}-strict-v2.json"
    report = json.loads(Path(download.value.path()).read_text())
    assert report["profile"] == "strict-v2" and len(report["evaluations"]) == 2
    assert ORDER_WARNING in report["warnings"][0]
    shots(page, "submission-record-strict")
    live["state"]["record"] = sid


def test_the_admin_acts_once_per_confirmation_and_cannot_promote_a_withdrawn_run(
    live: dict[str, Any],
    browser: Any,  # noqa: F811
) -> None:
    token = _token(live, browser)
    demo = live["data"] / "demo" / "medvidbench"
    gone = _upload(live, token, "medvidbench", demo / "predictions_weak.json", "Withdrawn Weak")
    _until(live, token, gone, lambda b: b["status"] == "scored")
    withdrawn = httpx.post(
        f"{live['url']}/api/v1/submissions/{gone}/visibility",
        headers={"Authorization": f"Bearer {token}"},
        data={"visibility": "withdrawn"},
    )
    assert withdrawn.status_code == 200
    page = logged_in(browser, live, ADMIN)
    page.goto(f"{live['url']}/admin")
    assert page.locator("input[type=checkbox]").count() == 0  # no "I confirm" boxes
    headers = page.locator("#admin-submissions thead th").all_inner_texts()
    assert headers == ["Id", "Model", "Team", "Status", "Visibility", "Hidden", "Actions"]
    row = page.locator(f"tr[data-submission='{gone}']")
    assert row.locator("button:has-text('Promote')").count() == 0
    assert "not promotable (withdrawn)" in row.inner_text()
    assert row.locator("td.visibility").inner_text() == "withdrawn"
    # Delete looks destructive, and unlike Hide; the profile menu follows Re-score
    styles = row.evaluate(
        """(row) => {
          const look = (b) => getComputedStyle(b).backgroundColor;
          const button = (t) => [...row.querySelectorAll("button")].find((b) => b.textContent === t);
          return {del: look(button("Delete")), hide: look(button("Hide")),
                  rescore: button("Re-score").getBoundingClientRect().right,
                  menu: row.querySelector("select[name=profile]").getBoundingClientRect().left};
        }"""
    )
    assert styles["del"] == "rgb(179, 38, 30)" and styles["hide"] != styles["del"]
    assert styles["menu"] > styles["rescore"]
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))  # the admin says no
    row.locator("button:has-text('Delete')").click()
    assert asked and asked[0].startswith(f"Delete submission {gone} for good?")
    assert page.locator(f"tr[data-submission='{gone}']").count() == 1  # nothing was done
    assert "Page 1 of" in page.locator("#audit-position").inner_text()
    shots(page, "admin-actions")


def test_a_hidden_submission_says_so_and_not_public(
    live: dict[str, Any],
    browser: Any,  # noqa: F811
) -> None:
    token = _token(live, browser)
    sid = live["state"].get("record")
    if sid is None:
        demo = live["data"] / "demo" / "medvidbench"
        sid = _upload(live, token, "medvidbench", demo / "predictions_strong.json", "Hidden One")
        _until(live, token, sid, lambda b: b["status"] == "scored")
    owner = logged_in(browser, live, RESEARCHER)
    owner.goto(f"{live['url']}/submissions/{sid}")
    assert owner.locator("#public-state").inner_text() == "Public: on the community board."
    admin = logged_in(browser, live, ADMIN)
    admin.goto(f"{live['url']}/admin")
    admin.once("dialog", lambda d: d.accept())
    admin.locator(f"tr[data-submission='{sid}'] button:has-text('Hide')").click()
    admin.wait_for_url("**#submissions")
    owner.reload()
    assert owner.locator("#public-state").count() == 0
    assert "Public" not in owner.locator("#visibility-state").inner_text()
    assert owner.locator("#hidden-note").is_visible()
    shots(owner, "submission-hidden")


def test_medsg_pages_carry_no_judge_words(
    live: dict[str, Any],
    browser: Any,  # noqa: F811
) -> None:
    token = _token(live, browser)
    demo = live["data"] / "demo" / "medsg"
    sid = _upload(live, token, "medsg", demo / "results_strong.json", "Grounder Words")
    _until(live, token, sid, lambda b: b["status"] in ("scored", "complete"))
    page = logged_in(browser, live, RESEARCHER)
    page.goto(f"{live['url']}/submissions/{sid}")
    assert page.locator("#timeline li").all_inner_texts() == ["queued", "scoring", "scored"]
    assert page.locator("#judge-note").count() == 0
    shown = page.locator("main").inner_text()
    before_log = shown.split("Log (")[0]
    assert "judg" not in before_log.lower()
    shots(page, "medsg-submission-words")
    page.goto(f"{live['url']}/b/medsg/about")
    assert "average rank over the 1 ranked metric;" in page.locator("main").inner_text()
    assert page.locator("main table code:empty").count() == 0
    shots(page, "medsg-about-words")
