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
from tests.server.conftest import build_runtime, make_user

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
