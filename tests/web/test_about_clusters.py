"""The About page says what a cluster is and how many the hosted test set has."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient


def test_about_page_counts_the_clusters(client: TestClient, synthetic: dict[str, Path]) -> None:
    records = json.loads(synthetic["ground_truth"].read_text())
    videos = len({str(r["metadata"]["video_id"]) for r in records})
    html = client.get("/b/medvidbench/about").text
    assert f"items fall into <strong>{videos:,}</strong> clusters" in html
    assert "metadata.recording" in html  # how a test set declares fewer, larger clusters
