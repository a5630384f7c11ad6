"""Uploads from real pipelines: a MedGRPO-Code multi-GPU file is restored and says so in the
log; a board that refuses order-only matches (``MEDVIDBENCH_REFUSE_ORDER_ONLY``) refuses a
file that only its order matches, with every reason."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from medvidbench.server.web.app import create_app
from tests import medgrpo_code as pipeline
from tests.server.conftest import build_runtime
from tests.web.conftest import login, token_for
from tests.web.test_api import upload


def _four_gpu_file(synthetic: dict[str, Path], out: Path) -> Path:
    test = json.loads(synthetic["ground_truth"].read_text())
    answers = json.loads(synthetic["strong"].read_text())
    text = {id(r): a["prediction"] for r, a in zip(test, answers, strict=True)}
    merged = pipeline.merge(pipeline.run(test, 4, lambda r: text[id(r)]))
    out.write_text(json.dumps(pipeline.convert(merged)))
    return out


def test_a_four_gpu_run_is_restored_and_scores_as_the_ordered_file(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path], tmp_path: Path
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    run = _four_gpu_file(synthetic, tmp_path / "submission.json")
    created = upload(client, token, run, "Four GPUs").json()
    assert created["warnings"] == []
    detail = client.get(f"/api/v1/submissions/{created['id']}").json()
    validated = next(e["message"] for e in detail["log"] if e["kind"] == "validated")
    assert "restored the order of a 4-GPU MedGRPO-Code run" in validated
    ordered = upload(client, token, synthetic["strong"], "In Order").json()
    in_order = client.get(f"/api/v1/submissions/{ordered['id']}").json()
    assert detail["metrics"] == in_order["metrics"]
    assert detail["metrics"]["cvs_acc"] is not None and detail["status"] == "scored"


@pytest.fixture
def refusing(tmp_path: Path, synthetic: dict[str, Path]) -> Iterator[tuple[TestClient, Runtime]]:
    rt = build_runtime(tmp_path, None, synthetic["ground_truth"], refuse_order_only=True)
    with TestClient(create_app(rt), follow_redirects=False) as c:
        yield c, rt
    rt.engine.dispose()


def test_a_board_can_refuse_order_only_matches(
    refusing: tuple[TestClient, Runtime], synthetic: dict[str, Path], tmp_path: Path
) -> None:
    client, rt = refusing
    login(client, rt)
    token = token_for(client)
    records = json.loads(synthetic["strong"].read_text())
    random.Random(4).shuffle(records)
    shuffled = tmp_path / "shuffled.json"
    shuffled.write_text(json.dumps(records))
    refused = upload(client, token, shuffled, "Shuffled")
    assert refused.status_code == 422
    said = json.dumps(refused.json())
    assert "order-only" in said and "matched to their test question by order alone" in said
    # the same answers in a known order are taken
    accepted = upload(client, token, _four_gpu_file(synthetic, tmp_path / "run.json"), "Run")
    assert accepted.status_code in (200, 201, 202), accepted.text
