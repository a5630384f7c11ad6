"""MedSG-Bench's item browser on the real target images: served from the operator's image
folder by item (never by a path from the request), confined to it, with the attribution list."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from medvidbench.server.services.submissions import submit
from medvidbench.server.web.app import create_app
from tests.server.conftest import build_runtime, make_user, postgres_url

__all__ = ["postgres_url"]  # the fixture, for the PostgreSQL case

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
GT = [
    {
        "task": "patch",
        "images": ["imgs/p0.png", "imgs/c1.png"],
        "question": "q0",
        "answer": [10, 10, 60, 60],
    },
    {"task": "patch", "images": ["../outside.png"], "question": "q1", "answer": [10, 10, 60, 60]},
    {
        "task": "referring",
        "images": ["imgs/r.png"],
        "question": "find it",
        "answer": [5, 5, 50, 50],
    },
]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, Runtime, Path]]:
    images = tmp_path / "images"
    (images / "imgs").mkdir(parents=True)
    (images / "imgs" / "p0.png").write_bytes(PNG)
    (images / "imgs" / "r.png").write_bytes(PNG)
    (tmp_path / "outside.png").write_bytes(PNG)  # next to the folder, not in it
    (images / "ATTRIBUTION.txt").write_text("Patch images: Example dataset, CC BY 4.0 <b>")
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(GT))
    rt = build_runtime(tmp_path, None, gt, benchmarks="medsg", image_dirs={"medsg": images})
    user = make_user(rt)
    predictions = [
        {"task": "patch", "index": 0, "prediction": "(10,10),(60,60)"},
        {"task": "patch", "index": 1, "prediction": "nothing"},
        {"task": "referring", "index": 0, "prediction": "[5, 5, 50, 50]"},
    ]
    sub = submit(rt, user, json.dumps(predictions).encode(), "Grounder", benchmark="medsg")
    with TestClient(create_app(rt), follow_redirects=False) as client:
        yield client, rt, Path(f"/submissions/{sub.id}")
    rt.engine.dispose()


def test_boxes_are_drawn_on_the_target_image(served: tuple[TestClient, Runtime, Path]) -> None:
    client, _, sub = served
    page = client.get(f"{sub}/items?task=patch").text
    assert '<image href="/b/medsg/item-image?key=patch%230"' in page
    assert 'href="/b/medsg/attribution"' in page
    image = client.get("/b/medsg/item-image", params={"key": "patch#0"})
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert image.content == PNG


def test_only_a_test_items_own_image_inside_the_folder_is_served(
    served: tuple[TestClient, Runtime, Path],
) -> None:
    client, _, _ = served
    for key in ("patch#1", "referring#0", "../outside.png", "patch#9"):
        # patch#1 points outside the folder; referring has no known target image
        assert client.get("/b/medsg/item-image", params={"key": key}).status_code == 404, key
    assert client.get("/b/medvidbench/item-image", params={"key": "tal#0"}).status_code == 404


def test_the_attribution_list_is_text(served: tuple[TestClient, Runtime, Path]) -> None:
    client, _, _ = served
    response = client.get("/b/medsg/attribution")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    assert "CC BY 4.0 <b>" in response.text  # served as text, never as HTML


def test_options_the_board_cannot_score_are_refused_at_upload(
    served: tuple[TestClient, Runtime, Path],
) -> None:
    from medvidbench.core.errors import InvalidSubmissionError
    from medvidbench.server.services.accounts import user_named

    _, rt, _ = served
    declared = {
        "coordinates": "0-1000",
        "predictions": [
            {"task": "patch", "index": 0, "prediction": "[30, 30, 180, 180]"},
            {"task": "patch", "index": 1, "prediction": "x"},
        ],
    }
    with rt.sessions() as session:
        user = user_named(session, "alice")
    with pytest.raises(InvalidSubmissionError, match="need the corrected profile"):
        submit(rt, user, json.dumps(declared).encode(), "Scaled", benchmark="medsg")


def _boom(*_: object, **__: object) -> None:
    raise AssertionError("a view must not open the upload or parse an answer")


def _never_reparse(monkeypatch: pytest.MonkeyPatch, rt: Runtime) -> None:
    import zipfile

    from medvidbench.benchmarks.medsg import archive, scoring, submission, tasks

    monkeypatch.setattr(rt.files, "read", _boom)  # the stored upload
    monkeypatch.setattr(rt.files, "local", _boom)
    monkeypatch.setattr(zipfile, "ZipFile", _boom)
    monkeypatch.setattr(archive, "json_members", _boom)
    monkeypatch.setattr(submission, "validate_submission", _boom)
    for name in ("score_official", "score_corrected"):
        monkeypatch.setattr(tasks, name, _boom)
    for name in ("parse_strong", "parse_old", "parse_corrected"):
        monkeypatch.setattr(scoring, name, _boom)


def test_a_view_reads_the_kept_results_and_never_reparses(
    served: tuple[TestClient, Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, rt, sub = served
    _never_reparse(monkeypatch, rt)
    patch = client.get(f"{sub}/items?task=patch")
    assert patch.status_code == 200, patch.text
    assert "(10,10),(60,60)" in patch.text and ">nothing</pre>" in patch.text
    assert 'class="unparsed"' in patch.text  # patch#1 could not be read
    failed = client.get(f"{sub}/items?task=patch&failed=1").text
    assert "nothing" in failed and "(10,10),(60,60)" not in failed
    referring = client.get(f"{sub}/items?task=referring&bucket=0.7-1").text
    assert "[5, 5, 50, 50]" in referring and "referring#0" in referring


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_kept_results_are_those_a_fresh_scoring_gives(
    tmp_path: Path, request: pytest.FixtureRequest, database: str
) -> None:
    """On a synthetic MedSG-Bench (every task, several pages), each item the browser shows has
    the answer, value, flags and box that scoring the stored file again gives."""
    from medvidbench import benchmarks
    from medvidbench.core.scoring import Context
    from medvidbench.server.services.items import PER_PAGE, item_page

    medsg = benchmarks.get("medsg")
    assert medsg.demo is not None
    demo = medsg.demo.synthesise(tmp_path / "demo", 400, 3)
    url = request.getfixturevalue("postgres_url") if database == "postgresql" else None
    rt = build_runtime(tmp_path, url, demo["ground_truth"], benchmarks="medsg")
    try:
        user = make_user(rt)
        sent = demo["qwen-json"].read_bytes()
        sub = submit(rt, user, sent, "Fresh", benchmark="medsg")
        gt = rt.ground_truth(medsg_sha(rt), "medsg")
        matched = medsg.validate_submission(sent, gt)
        checked = 0
        for task, scorer in medsg.scorers().items():
            items = [s for s in gt.samples if s.task == task]
            if not items:
                continue
            texts = [matched.predictions[s.index] for s in items]
            fresh = scorer.evaluate(items, texts, medsg.profile(), Context(options=matched.options))
            shown = []
            for n in range(1, -(-len(items) // PER_PAGE) + 1):
                shown += item_page(rt, sub.id, user, task, page=n).rows
            assert [r.key for r in shown] == [s.sample_id for s in items]
            for row, s, r, text in zip(shown, items, fresh.samples, texts, strict=True):
                assert row.answer == (text if isinstance(text, str) else str(text))[:600]
                assert (row.parsed, row.note, row.values) == (r.parsed, r.note, r.values)
                assert row.drawing == medsg.presentation.item_drawing(s, r) | {"image_url": None}
                checked += 1
        assert checked == len(gt.samples)
    finally:
        rt.engine.dispose()


def medsg_sha(rt: Runtime) -> str:
    from medvidbench.server.services.submissions import current_benchmark

    return current_benchmark(rt, "medsg").gt_sha256


def test_an_evaluation_scored_before_items_were_kept_asks_for_a_rescore(
    served: tuple[TestClient, Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import delete

    from medvidbench.server.services.evaluations import rescore
    from medvidbench.server.store.db import transaction
    from medvidbench.server.store.models import EvaluationItem

    client, rt, sub = served
    with transaction(rt.sessions) as session:
        session.execute(delete(EvaluationItem))  # as stored before this version
    with monkeypatch.context() as patched:
        _never_reparse(patched, rt)
        page = client.get(f"{sub}/items")
    assert page.status_code == 200 and 'id="rescore-to-browse"' in page.text
    assert "Re-score it to browse its items" in page.text and 'id="items"' not in page.text
    assert rescore(rt, int(sub.name), "official")  # the admin's re-score keeps them now
    again = client.get(f"{sub}/items?task=patch").text
    assert "(10,10),(60,60)" in again and "rescore-to-browse" not in again
