"""The OpenAPI document describes every ``/api/v1`` response, field by field."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from tests.web.conftest import login, token_for

SUCCESS = ("200", "201", "202")


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A schema with its ``$ref`` followed and, for an array, its items' schema."""
    while True:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            schema = document["components"]["schemas"][name]
        elif schema.get("type") == "array":
            schema = schema.get("items", {})
        else:
            return schema


def _undescribed(document: dict[str, Any]) -> list[str]:
    """The ``/api/v1`` operations whose success response does not name its fields."""
    missing = []
    for path, operations in document["paths"].items():
        if not path.startswith("/api/v1"):
            continue
        for method, operation in operations.items():
            statuses = [s for s in SUCCESS if s in operation["responses"]]
            if not statuses:
                missing.append(f"{method.upper()} {path}: no success response")
            for status in statuses:
                content = operation["responses"][status].get("content", {})
                schema = content.get("application/json", {}).get("schema", {})
                if not _resolve(document, schema).get("properties"):
                    missing.append(f"{method.upper()} {path} {status}")
    return missing


def test_every_api_response_has_a_schema(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    assert sum(p.startswith("/api/v1") for p in document["paths"]) >= 15
    assert _undescribed(document) == []


def test_an_untyped_answer_is_caught() -> None:
    """The check itself: an object without properties, or no JSON schema, is reported."""
    document: dict[str, Any] = {
        "components": {"schemas": {"Typed": {"properties": {"id": {"type": "integer"}}}}},
        "paths": {
            "/api/v1/typed": {
                "get": {
                    "responses": {
                        "200": {
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "array",
                                        "items": {"$ref": "#/components/schemas/Typed"},
                                    }
                                }
                            }
                        }
                    }
                }
            },
            "/api/v1/loose": {
                "get": {
                    "responses": {
                        "200": {
                            "content": {
                                "application/json": {
                                    "schema": {"type": "object", "additionalProperties": True}
                                }
                            }
                        }
                    }
                }
            },
            "/api/v1/bare": {"get": {"responses": {"200": {"description": "ok"}}}},
        },
    }
    assert _undescribed(document) == ["GET /api/v1/loose 200", "GET /api/v1/bare 200"]


def test_the_response_models_change_no_body(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    """Each answer is byte for byte what its handler returns (key order, whole numbers)."""
    from medvidbench.server.services.accounts import user_named
    from medvidbench.server.services.boards import board_rows
    from medvidbench.server.services.details import submission_view
    from medvidbench.server.web import api

    rt = web_runtime
    login(client, rt)
    auth = {"Authorization": f"Bearer {token_for(client)}"}
    for name, archetype, visibility in (("M1", "strong", "public"), ("M2", "weak", "private")):
        sent = client.post(
            "/api/v1/submissions",
            headers=auth,
            files={"file": ("p.json", synthetic[archetype].read_bytes())},
            data={"model_name": name, "visibility": visibility},
        )
        assert sent.status_code == 202, sent.text
    private = sent.json()["id"]
    rows = [*board_rows(rt, "community"), *board_rows(rt, "official")]
    ids = [r.entry_id for r in rows][:3]
    with rt.sessions() as session:
        me = user_named(session, "webuser")
        session.expunge(me)
    expected: dict[str, Callable[[], Any]] = {
        "/api/v1/health": lambda: api.health(rt, False),  # a submitter: no judge endpoint
        "/api/v1/benchmarks": lambda: api.benchmarks(rt),
        "/api/v1/benchmarks/medvidbench": lambda: api.benchmark(rt, "medvidbench"),
        "/api/v1/metrics": lambda: api.metrics(rt),
        f"/api/v1/entries/{ids[0]}": lambda: api.entry(rt, ids[0]),
        f"/api/v1/compare?entries={ids[0]},{ids[1]},{ids[2]}": lambda: api.compare(
            rt, ",".join(map(str, ids))
        ),
        f"/api/v1/submissions/{private}": lambda: submission_view(rt, private, me, None),
        "/api/v1/boards/official?per_page=1000": lambda: [
            asdict(r) for r in board_rows(rt, "official")
        ],
        "/api/v1/quota": lambda: api.my_quota(rt, me),
    }
    assert len(ids) == 3
    for url, handler in expected.items():
        body = json.dumps(handler(), separators=(",", ":"), ensure_ascii=False)
        assert client.get(url, headers=auth).text == body, url


def test_every_api_operation_declares_the_error_body_it_answers_with(
    client: TestClient, web_runtime: Runtime, tmp_path: Path
) -> None:
    """docs/server.md: the document gives the fields of every answer, refusals included. Each
    operation names ErrorBody for its 4xx and 503 (FastAPI's own 422 shape is never sent), and
    real refusals of several kinds are instances of it."""
    from medvidbench.server.web.schemas import ErrorBody

    document = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in json.dumps(document)
    for path, operations in document["paths"].items():
        if not path.startswith("/api/v1"):
            continue
        for method, operation in operations.items():
            for status in ("401", "404", "422", "429", "503"):
                schema = operation["responses"][status]["content"]["application/json"]["schema"]
                if path.startswith("/api/v1/health") and status == "503":
                    continue  # the health checks answer their own body when not ready
                assert schema["$ref"].endswith("/ErrorBody"), (method, path, status)
    login(client, web_runtime)
    auth = {"Authorization": f"Bearer {token_for(client)}"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "x", "qa_type": "tal", "prediction": None}]))
    refusals = [
        client.get("/api/v1/submissions/999999", headers=auth),  # 404
        client.post("/api/v1/submissions", headers={"Authorization": "Bearer mvb_no"}),  # 401
        client.post(  # 422: an invalid file, every problem located
            "/api/v1/submissions",
            headers=auth,
            files={"file": ("p.json", bad.read_bytes())},
            data={"model_name": "Bad"},
        ),
        client.post("/api/v1/submissions", headers=auth, data={"model_name": "x"}),  # 422: no file
        client.get("/api/v1/boards/official?per_page=0"),  # 422: a parameter out of range
    ]
    assert [r.status_code for r in refusals] == [404, 401, 422, 422, 422]
    for answer in refusals:
        ErrorBody.model_validate(answer.json(), strict=True)
