"""The REST API: shapes, errors, and scores identical to the offline evaluator."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from medvidbench.benchmarks.medvidbench.metrics import METRIC_KEYS
from medvidbench.library import evaluate
from medvidbench.server.runtime import Runtime
from tests.web.conftest import login, token_for


def upload(client: TestClient, token: str, path: Path, name: str, **extra: str):  # type: ignore[no-untyped-def]
    with path.open("rb") as fh:
        return client.post(
            "/api/v1/submissions",
            headers={"Authorization": f"Bearer {token}"},
            files={"file": (path.name, fh, "application/json")},
            data={"model_name": name, **extra},
        )


def test_public_endpoints(client: TestClient) -> None:
    health = client.get("/api/v1/health").json()
    assert health["status"] == "ok" and health["demo"] is True and health["samples"] == 600
    (bench,) = client.get("/api/v1/benchmarks").json()
    test_set = {"id", "name", "sha256", "samples", "tasks", "demo"}
    about = {"slug", "title", "version", "scorer_version", "labels", "url", "api"}
    assert set(bench) == test_set | about  # what a benchmark and its test set are, no labels
    table = client.get("/api/v1/metrics").json()
    assert [m["key"] for m in table["metrics"]] == list(METRIC_KEYS)
    # each profile with its named rule variants (what a score's rules were, by name)
    assert table["profiles"][1] == {
        "name": "strict-v2",
        "description": table["profiles"][1]["description"],
        "variants": {"extraction": "tolerant", "scoring": "corrected"},
    }
    board = client.get("/api/v1/boards/official").json()
    assert len(board) == 19 and all(
        r["badges"] == ["reported"] or "reported" in r["badges"] for r in board
    )
    assert [r["place"] for r in board] == list(range(1, 20))
    assert [r["rank"] for r in board] == [  # reported numbers: equal average ranks share a rank
        1 + sum(o["average_rank"] < r["average_rank"] for o in board) for r in board
    ]
    csv = client.get("/api/v1/boards/official?format=csv")
    assert csv.headers["content-type"].startswith("text/csv") and "TAG_mIoU@0.3" in csv.text
    spec = client.get("/openapi.json").json()
    assert "/api/v1/submissions" in spec["paths"] and "/api/v1/boards/{kind}" in spec["paths"]


def test_errors_have_one_json_shape(client: TestClient) -> None:
    for response, status in (
        (client.get("/api/v1/boards/weekly"), 404),
        (client.get("/api/v1/boards/official?format=xml"), 400),
        (client.get("/api/v1/submissions"), 401),
        (client.get("/api/v1/compare?entries=999999"), 404),
    ):
        assert response.status_code == status
        body = response.json()
        assert set(body) >= {"error", "message"} and body["message"]


def test_submission_through_the_api_scores_like_the_evaluator(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    created = upload(client, token, synthetic["strong"], "ApiModel", organisation="Lab")
    assert created.status_code == 202, created.text
    body = created.json()
    detail = client.get(f"/api/v1/submissions/{body['id']}").json()
    assert detail["status"] == "scored"
    expected = evaluate(synthetic["strong"], synthetic["ground_truth"]).metrics
    assert detail["metrics"] == expected
    mine = client.get("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"}).json()
    assert [s["model_name"] for s in mine] == ["ApiModel"]
    entry = next(r for r in client.get("/api/v1/boards/community").json())
    compared = client.get(f"/api/v1/compare?entries={entry['entry_id']}").json()
    assert compared["entries"][0]["model_name"] == "ApiModel"
    assert compared["columns"]["tag_miou_03"] == "TAG_mIoU@0.3"
    normalised = compared["entries"][0]["normalised"]
    assert set(normalised) == set(METRIC_KEYS) and normalised["vs_llm"] is None  # not judged
    assert normalised["cvs_acc"] == compared["entries"][0]["metrics"]["cvs_acc"]  # 0-1 already


def test_invalid_duplicate_and_oversized_uploads(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path], tmp_path: Path
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "x", "qa_type": "tal", "prediction": None}]))
    invalid = upload(client, token, bad, "Bad")
    assert invalid.status_code == 422
    assert invalid.json()["problems"][0]["message"].startswith("record 0 (id 'x')")
    assert upload(client, token, synthetic["weak"], "One").status_code == 202
    duplicate = upload(client, token, synthetic["weak"], "Two")
    assert duplicate.status_code == 409 and "already submitted" in duplicate.json()["message"]
    web_runtime.settings.max_submission_bytes = 1000
    too_big = upload(client, token, synthetic["strong"], "Big")
    assert too_big.status_code == 413
    wrong = upload(client, "mvb_wrong", synthetic["strong"], "X")  # sent, and refused: said so
    assert wrong.status_code == 401 and wrong.json()["message"] == "invalid or revoked API token"
    unsent = client.post("/api/v1/submissions", files={"file": ("p.json", b"[]")})
    assert unsent.status_code == 401 and unsent.json()["message"].startswith("send an API token")
    web_runtime.settings.max_submission_bytes = 1 << 30
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(b'[{"id": "x", "qa_type": "tal", "prediction": "caf\xe9"}]')
    not_utf8 = upload(client, token, latin1, "Latin")
    assert not_utf8.status_code == 422
    assert (
        "not valid UTF-8: byte 0xe9 at line 1, column 50"
        in not_utf8.json()["problems"][0]["message"]
    )


def test_large_uploads_are_checked_in_a_child_process_with_the_same_result(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path], tmp_path: Path
) -> None:
    from medvidbench.server.upload_check import UploadChecker

    web_runtime.upload_checker = UploadChecker(
        0, web_runtime.settings.max_submission_bytes
    )  # every upload goes to the child
    try:
        login(client, web_runtime)
        token = token_for(client)
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps([{"id": "x", "qa_type": "tal", "prediction": None}]))
        invalid = upload(client, token, bad, "Bad in child")
        assert invalid.status_code == 422
        assert invalid.json()["problems"][0]["message"].startswith("record 0 (id 'x')")
        accepted = upload(client, token, synthetic["strong"], "Strong in child")
        assert accepted.status_code == 202, accepted.text
        assert web_runtime.upload_checker._pool is not None  # the child really ran
    finally:
        web_runtime.upload_checker.close()
    scored = client.get(f"/api/v1/submissions/{accepted.json()['id']}").json()
    offline = evaluate(synthetic["strong"], web_runtime.ground_truth(_sha(web_runtime)))
    assert scored["metrics"] == offline.metrics
    incoming = web_runtime.data_dir / "incoming"
    assert not incoming.exists() or list(incoming.iterdir()) == []  # nothing left behind


def _sha(runtime: Runtime) -> str:
    from medvidbench.server.services.submissions import current_benchmark

    return current_benchmark(runtime).gt_sha256


def test_board_json_is_paginated_like_the_page(client: TestClient, web_runtime: Runtime) -> None:
    everything = client.get("/api/v1/boards/official?per_page=1000").json()
    assert len(everything) == 19
    first = client.get("/api/v1/boards/official?per_page=5")
    assert [r["rank"] for r in first.json()] == [1, 2, 3, 4, 5]
    assert first.headers["x-total-count"] == "19"
    assert 'page=2&per_page=5>; rel="next"' in first.headers["link"]
    assert 'page=4&per_page=5>; rel="last"' in first.headers["link"]
    last = client.get("/api/v1/boards/official?per_page=5&page=4")
    assert [r["rank"] for r in last.json()] == [16, 17, 18, 19]
    assert 'rel="prev"' in last.headers["link"] and 'rel="next"' not in last.headers["link"]
    assert client.get("/api/v1/boards/official?page=0").status_code == 422


def test_both_downloads_are_files_named_after_the_board_and_the_day(client: TestClient) -> None:
    from datetime import UTC, datetime

    day = datetime.now(UTC).date().isoformat()
    for fmt, kind in (("csv", "text/csv"), ("json", "application/json")):
        response = client.get(
            "/api/v1/benchmarks/medvidbench/boards/official",
            params={"format": fmt, "download": "1"},
        )
        assert response.status_code == 200 and response.headers["content-type"].startswith(kind)
        assert response.headers["content-disposition"] == (
            f'attachment; filename="medvidbench-official-{day}.{fmt}"'
        )
    whole = client.get(
        "/api/v1/benchmarks/medvidbench/boards/official", params={"format": "json", "download": "1"}
    ).json()
    assert len(whole) == len(client.get("/api/v1/boards/official").json())


def test_reported_rows_carry_their_sources_date_or_none(client: TestClient) -> None:
    rows = client.get("/api/v1/boards/official").json()
    reported = [r for r in rows if "reported" in r["badges"]]
    assert reported and all(r["date"] in ("", "2026-04-15") for r in reported)
    assert any(r["date"] == "2026-04-15" for r in reported)  # from published_results.json
