"""Pages: they render, stay small, escape everything, and guard every form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from medvidbench.server.services.entries import add_reported
from tests.web.conftest import csrf, login

PAGES = [
    "/",
    "/b/medvidbench/board/official",
    "/b/medvidbench/board/community",
    "/b/medvidbench/about",
    "/b/medvidbench/compare",
    "/login",
    "/signup",
    "/b/medvidbench/compare?entries=1,2",
    "/b/medvidbench/board/official?sort=nap_acc&order=asc&q=qwen",
]


@pytest.mark.parametrize("path", PAGES)
def test_pages_render_small_with_security_headers(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert len(response.content) < 300_000
    assert "Demo data." in response.text
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "<script>" not in response.text  # no inline script anywhere


def test_about_names_metrics_correctly(client: TestClient) -> None:
    text = client.get("/b/medvidbench/about").text
    assert "TAG_mIoU@0.3" in text and "not mAP" in text
    assert "R2 medical terminology, R3" in text and "R7" not in text
    assert "average rank" in text


def test_login_logout_and_wrong_password(client: TestClient, web_runtime: Runtime) -> None:
    login(client, web_runtime)
    assert "webuser" in client.get("/").text
    wrong = client.post(
        "/login", data={"username": "webuser", "password": "nope-nope-nope", "csrf": csrf(client)}
    )
    assert wrong.status_code == 401 and "wrong username or password" in wrong.text
    client.post("/logout", data={"csrf": csrf(client, "/")})
    # anonymous visitors read how to submit, and are asked to log in instead of a bare redirect
    anonymous = client.get("/b/medvidbench/submit")
    assert anonymous.status_code == 200
    assert 'href="/login?next=/b/medvidbench/submit">Log in to submit</a>' in anonymous.text
    for part in (
        'id="example"',
        "kcOqlifSukA&amp;&amp;22425",
        'id="limits"',
        "1024 MiB",
        # hidden labels: a researcher has the questions file, never the answers (#32 item 14)
        "medvidbench validate predictions.json --questions questions.json --benchmark medvidbench",
    ):
        assert part in anonymous.text, part
    assert 'name="file"' not in anonymous.text  # no upload form without an account


def test_forms_without_the_csrf_token_are_refused(client: TestClient, web_runtime: Runtime) -> None:
    login(client, web_runtime)
    response = client.post("/account/tokens", data={"name": "x"})
    assert response.status_code == 403 and "another site" in response.text


def submit_form(client: TestClient, token: str, path: Path, model: str) -> Any:
    """The submit page's form, sent with ``path`` as the prediction file."""
    with path.open("rb") as fh:
        return client.post(
            "/b/medvidbench/submit",
            data={"model_name": model, "csrf": token},
            files={"file": (path.name, fh, "application/json")},
        )


def test_submit_through_the_form(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime)
    token = csrf(client, "/b/medvidbench/submit")
    with synthetic["strong"].open("rb") as fh:
        response = client.post(
            "/b/medvidbench/submit",
            data={"model_name": "FormModel", "csrf": token, "prompting": "zero-shot"},
            files={"file": ("p.json", fh, "application/json")},
        )
    assert response.status_code == 303
    detail = client.get(response.headers["location"])
    assert "FormModel" in detail.text and "TAG_mIoU@0.3" in detail.text
    assert "Per dataset" in detail.text
    with synthetic["ground_truth"].open("rb") as fh:
        refused = client.post(
            "/b/medvidbench/submit",
            data={"model_name": "GT", "csrf": token},
            files={"file": ("gt.json", fh, "application/json")},
        )
    assert refused.status_code == 422 and 'id="problems"' in refused.text


def test_the_form_upload_is_closed_when_the_request_ends(
    client: TestClient,
    web_runtime: Runtime,
    synthetic: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The spooled copy of an uploaded file (on disk past 1 MB) is closed by the submit page
    itself, accepted or refused, not left open until the collector finds it."""
    from starlette.datastructures import UploadFile

    opened: list[UploadFile] = []
    real_init = UploadFile.__init__

    def recording(self: UploadFile, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        opened.append(self)

    monkeypatch.setattr(UploadFile, "__init__", recording)
    login(client, web_runtime)
    token = csrf(client, "/b/medvidbench/submit")
    for name, model in ((synthetic["strong"], "Closed"), (synthetic["ground_truth"], "GT")):
        assert submit_form(client, token, name, model).status_code in (303, 422)
    assert len(opened) == 2 and all(u.file.closed for u in opened)


def test_a_family_no_hosted_benchmark_has_is_an_empty_consensus(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    """Only MedVidBench is hosted here, which has no multiple-choice task: its consensus pool is
    empty (200), not a server error, after a submission is on the board."""
    login(client, web_runtime)
    token = csrf(client, "/b/medvidbench/submit")
    assert submit_form(client, token, synthetic["strong"], "Pooled").status_code == 303
    assert client.get("/api/v1/consensus").json()  # the whole board has rows
    assert client.get("/api/v1/consensus?family=multiple-choice").json() == []
    assert client.get("/consensus?family=multiple-choice").status_code == 200


def test_a_family_a_hosted_plugin_names_can_be_pooled(client: TestClient) -> None:
    """adding-a-benchmark.md: a task's family is a shared one or a new one. A new family is one
    to pool by once a hosted benchmark names it, and unknown while none does."""
    import dataclasses
    from types import SimpleNamespace

    from medvidbench import benchmarks
    from medvidbench.core.errors import UsageError
    from medvidbench.server.web.pages.consensus import checked_family, families

    demo = benchmarks.get("mcqa-demo")
    counting = dataclasses.replace(
        demo,
        slug="toolcount",
        tasks=tuple(dataclasses.replace(t, family="counting") for t in demo.tasks),
    )
    medvidbench = benchmarks.get("medvidbench")
    hosted = {"medvidbench": medvidbench, "toolcount": counting}
    rt: Any = SimpleNamespace(hosted=list(hosted), definition=hosted.__getitem__)
    assert families(rt)["counting"] == "named by toolcount"
    assert checked_family(rt, "counting") == "counting"
    assert checked_family(rt, "captioning") == "captioning"
    with pytest.raises(UsageError, match=r"unknown family 'telepathy'; there are: .*counting"):
        checked_family(rt, "telepathy")
    alone: Any = SimpleNamespace(hosted=["medvidbench"], definition=hosted.__getitem__)
    with pytest.raises(UsageError, match="unknown family 'counting'"):
        checked_family(alone, "counting")
    assert client.get("/api/v1/consensus?family=counting").status_code == 400  # none names it


def test_hostile_names_are_escaped(client: TestClient, web_runtime: Runtime) -> None:
    add_reported(
        web_runtime,
        None,
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(2)>",
        {"cvs_acc": 0.5},
        source='"><b>x</b>',
    )
    text = client.get("/b/medvidbench/board/official").text
    assert "<script>alert(1)</script>" not in text and "&lt;script&gt;alert(1)" in text
    assert "<img src=x" not in text and "<b>x</b>" not in text


def test_admin_pages_need_the_admin_role_and_confirmation(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    assert client.get("/admin").status_code == 401
    login(client, web_runtime)
    assert client.get("/admin").status_code == 403
    client.post("/logout", data={"csrf": csrf(client, "/")})
    login(client, web_runtime, "boss", "admin")
    page = client.get("/admin")
    assert page.status_code == 200 and "Audit log" in page.text
    token = csrf(client, "/admin")
    unconfirmed = client.post(
        "/admin/add", data={"csrf": token, "model_name": "M", "team": "T", "cvs_acc": "0.4"}
    )
    # not done yet: the server asks once (the browser's dialog does it with script)
    assert (
        unconfirmed.status_code == 200
        and "Add M to the official medvidbench board" in unconfirmed.text
    )
    assert "M" not in [r["model_name"] for r in client.get("/api/v1/boards/official").json()]
    done = client.post(
        "/admin/add",
        data={
            "csrf": token,
            "model_name": "Manual",
            "team": "T",
            "cvs_acc": "0.4",
            "confirm": "yes",
        },
    )
    assert done.status_code == 303
    assert "Manual" in client.get("/b/medvidbench/board/official").text
    assert "entry.add" in client.get("/admin").text
    assert client.post("/admin/explode", data={"csrf": token, "confirm": "yes"}).status_code == 404


def test_signup_can_be_closed(client: TestClient, web_runtime: Runtime) -> None:
    web_runtime.settings.signup_enabled = False
    response = client.post(
        "/signup", data={"username": "newbie", "password": "x" * 12, "csrf": csrf(client, "/login")}
    )
    assert response.status_code == 403


def test_hostile_submission_fields_are_escaped_on_every_page(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    from tests.web.conftest import token_for

    login(client, web_runtime, "mallory")
    token = token_for(client)
    payload = "<script>alert(document.cookie)</script>"
    with synthetic["weak"].open("rb") as fh:
        created = client.post(
            "/api/v1/submissions",
            headers={"Authorization": f"Bearer {token}"},
            files={"file": ("w.json", fh)},
            data={
                "model_name": payload,
                "organisation": "<img src=x onerror=1>",
                "model_url": 'https://example.org/"><script>x()</script>',
            },
        )
    assert created.status_code == 202, created.text
    sid = created.json()["id"]
    entry = client.get("/api/v1/boards/community").json()[0]["entry_id"]
    client.post("/logout", data={"csrf": csrf(client, "/")})
    login(client, web_runtime, "admin2", "admin")
    for path in (
        "/b/medvidbench/board/community",
        f"/submissions/{sid}",
        f"/compare?entries={entry}",
        "/admin",
        "/account",
        "/b/medvidbench/board/community?q=%3Cscript%3E",
    ):
        text = client.get(path).text
        assert "<script>alert" not in text and "<img src=x" not in text, path
        assert "<script>x()" not in text, path
    csv_text = client.get("/api/v1/boards/community?format=csv").text
    assert payload in csv_text  # data, not markup: a CSV is not rendered as HTML


def test_without_a_judge_pages_say_not_judged_instead_of_pending(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    from medvidbench.server.services.submissions import submit
    from tests.server.conftest import make_user

    web_runtime.settings.judge_enabled = None
    web_runtime.settings.judge_api_key = None
    web_runtime.settings.judge_base_url = None
    sub = submit(
        web_runtime, make_user(web_runtime, "nojudge"), synthetic["strong"].read_bytes(), "NoJudge"
    )
    page = client.get(f"/submissions/{sub.id}").text
    assert "Not judged: no judge configured on this server" in page
    assert 'data-final="yes"' in page and ">pending<" not in page and "pending judge" not in page
    board = client.get("/b/medvidbench/board/community").text
    assert "not judged" in board and ">pending<" not in board
    assert client.get("/favicon.ico").headers["content-type"] == "image/svg+xml"
    answer = client.get(f"/api/v1/submissions/{sub.id}").json()  # says what the page says
    statuses = {t: info["status"] for t, info in answer["per_task"].items()}
    assert statuses["video_summary"] == statuses["region_caption"] == "not judged", statuses
    assert "pending judge" not in statuses.values()

    from pydantic import SecretStr

    web_runtime.settings.judge_api_key = SecretStr("k")
    page = client.get(f"/submissions/{sub.id}").text
    assert "Not judged" not in page and ">pending judge<" in page and 'data-final="no"' in page


def test_pages_take_metric_counts_scales_and_judged_columns_from_the_metric_table(
    client: TestClient,
) -> None:
    from medvidbench.benchmarks.medvidbench.metrics import METRICS

    board = client.get("/b/medvidbench/board/official").text
    assert f"all {len(METRICS)} metrics" in board
    judged = [m.column for m in METRICS if m.judged]
    compare = client.get("/b/medvidbench/compare?entries=1,2").text
    assert all(f"{c} (1-5)" in compare for c in judged)
    about = client.get("/b/medvidbench/about").text
    assert f"average rank over the {sum(m.ranked for m in METRICS)} ranked metrics" in about


def test_single_benchmark_urls_of_earlier_versions_redirect_to_the_benchmark(
    client: TestClient,
) -> None:
    for old, new in (
        ("/board/community?q=x", "/b/medvidbench/board/community?q=x"),
        ("/about", "/b/medvidbench/about"),
        ("/compare?entries=1,2", "/b/medvidbench/compare?entries=1,2"),
        ("/submit", "/b/medvidbench/submit"),
    ):
        response = client.get(old)
        assert response.status_code == 307 and response.headers["location"] == new, old
    assert client.get("/b/medvidbench").headers["location"] == "/b/medvidbench/"
    assert client.get("/b/medvidbench/").status_code == 200
    missing = client.get("/b/spinebench/board/official")
    assert missing.status_code == 404 and "hosted: medvidbench" in missing.text
    assert client.get("/b/spinebench").status_code == 404


def test_the_old_api_paths_answer_as_the_benchmark_scoped_ones(client: TestClient) -> None:
    for path in ("/boards/official", "/metrics", "/compare?entries=1,2"):
        old = client.get("/api/v1" + path)
        new = client.get("/api/v1/benchmarks/medvidbench" + path)
        assert old.status_code == new.status_code == 200, path
        assert old.json() == new.json(), path
    paths = client.get("/openapi.json").json()["paths"]
    assert paths["/api/v1/boards/{kind}"]["get"]["deprecated"] is True
    assert "deprecated" not in paths["/api/v1/benchmarks/{slug}/boards/{kind}"]["get"]


def test_hidden_labels_have_no_item_browser(
    client: TestClient, web_runtime: Runtime, synthetic
) -> None:  # type: ignore[no-untyped-def]
    """MedVidBench keeps its labels hidden: no link, and the item page answers 404."""
    login(client, web_runtime)
    token = csrf(client, "/b/medvidbench/submit")
    with synthetic["strong"].open("rb") as fh:
        sent = client.post(
            "/b/medvidbench/submit",
            data={"model_name": "Hidden labels", "csrf": token},
            files={"file": ("p.json", fh, "application/json")},
        )
    page_url = sent.headers["location"]
    assert "browse-items" not in client.get(page_url).text
    items = client.get(page_url + "/items")
    assert items.status_code == 404 and "keeps its labels hidden" in items.text


def test_a_ground_truth_upload_gets_one_clear_message(
    client: TestClient, web_runtime: Runtime, synthetic
) -> None:  # type: ignore[no-untyped-def]
    login(client, web_runtime)
    token = csrf(client, "/b/medvidbench/submit")
    sent = submit_form(client, token, synthetic["ground_truth"], "Oops")
    assert sent.status_code == 422
    assert "this looks like a ground-truth file" in sent.text
    assert sent.text.count("<li><code>") == 1  # one message, not one per record


def test_a_long_problem_list_ends_with_how_many_more(
    client: TestClient, web_runtime: Runtime
) -> None:
    import json

    login(client, web_runtime)
    token = csrf(client, "/b/medvidbench/submit")
    bad = [{"id": f"nope-{i}", "qa_type": "tal", "prediction": "1-2"} for i in range(80)]
    sent = client.post(
        "/b/medvidbench/submit",
        data={"model_name": "Many problems", "csrf": token},
        files={"file": ("p.json", json.dumps(bad).encode(), "application/json")},
    )
    assert sent.status_code == 422
    shown = sent.text.count("<li><code>")
    assert shown < 80 and f"… and {80 - shown} more" in sent.text


def test_the_submission_page_says_why_samples_were_not_scored(
    client: TestClient, web_runtime: Runtime, synthetic
) -> None:  # type: ignore[no-untyped-def]
    login(client, web_runtime)
    token = csrf(client, "/b/medvidbench/submit")
    with synthetic["garbage"].open("rb") as fh:
        sent = client.post(
            "/b/medvidbench/submit",
            data={"model_name": "Garbage", "csrf": token},
            files={"file": ("p.json", fh, "application/json")},
        )
    page = client.get(sent.headers["location"]).text
    assert "not scored: no N/5 score found" in page


def test_reported_rows_link_their_source(client: TestClient) -> None:
    board = client.get("/b/medvidbench/board/official").text
    assert 'class="source" href="/b/medvidbench/about#reported"' in board
    about = client.get("/b/medvidbench/about").text
    assert 'id="reported"' in about and "Reported on the public MedVidBench leaderboard" in about
