"""Schemathesis against the app's own OpenAPI document: no input makes the server fail (5xx).

Driven explicitly (each operation's Hypothesis strategy, run by ``given``) rather than through
schemathesis' pytest plugin, whose fixture integration does not work with this pytest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from medvidbench.server.services.accounts import create_token
from medvidbench.server.web.app import create_app
from tests.server.conftest import build_runtime, make_user

EXAMPLES = 40


def test_no_input_causes_a_server_error(tmp_path: Path, synthetic: dict[str, Path]) -> None:
    rt = build_runtime(tmp_path, None, synthetic["ground_truth"])
    user = make_user(rt, "fuzzer")
    token = create_token(rt, user)
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(rt))
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 8
    cases = 0

    def check(case: Any, headers: dict[str, str]) -> None:
        nonlocal cases
        cases += 1
        response = case.call(headers=headers)
        assert response.status_code < 500, (
            f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:300]}"
        )

    def runner(headers: dict[str, str]) -> Any:
        def run(case: Any) -> None:
            check(case, headers)

        return run

    for operation in operations:
        for headers in ({}, {"Authorization": f"Bearer {token}"}):
            test = given(case=operation.as_strategy())(runner(headers))
            settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )(test)()
    print(f"schemathesis: {cases} generated requests over {len(operations)} operations")
    assert cases > len(operations) * 10
    rt.engine.dispose()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/boards/%00",
        "/api/v1/submissions/-1",
        "/api/v1/compare?entries=a,b",
        "/api/v1/entries/99999999999",
    ],
)
def test_odd_paths_are_client_errors(client: Any, path: str) -> None:
    assert 400 <= client.get(path).status_code < 500
