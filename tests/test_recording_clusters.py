"""A MedVidBench test set may declare the source recording of each clip (metadata.recording):
the bootstrap then resamples recordings, not video ids, and every interval says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medvidbench import benchmarks
from medvidbench.benchmarks.medvidbench.groundtruth import load_ground_truth
from medvidbench.core.errors import InvalidGroundTruthError
from medvidbench.library import evaluate

RECORDINGS = 6


def _with_recordings(gt: Path, out: Path) -> tuple[Path, int]:
    """The test set with each video id assigned to one of a few recordings."""
    records = json.loads(gt.read_text())
    videos = sorted({str(r["metadata"]["video_id"]) for r in records})
    of = {v: f"recording-{i % RECORDINGS}" for i, v in enumerate(videos)}
    for r in records:
        r["metadata"]["recording"] = of[str(r["metadata"]["video_id"])]
    out.write_text(json.dumps(records))
    return out, len(videos)


def test_declared_recordings_are_the_clusters(synthetic: dict[str, Path], tmp_path: Path) -> None:
    declared, videos = _with_recordings(synthetic["ground_truth"], tmp_path / "gt.json")
    bench = benchmarks.get("medvidbench")
    plain_gt, recorded_gt = (
        load_ground_truth(synthetic["ground_truth"]),
        load_ground_truth(declared),
    )
    cluster_of = bench.uncertainty.cluster_of
    assert len({cluster_of(s) for s in plain_gt.samples}) == videos > 3 * RECORDINGS
    assert {cluster_of(s) for s in recorded_gt.samples} == {
        f"recording-{i}" for i in range(RECORDINGS)
    }
    plain = evaluate(synthetic["strong"], plain_gt, bootstrap=200, seed=1).statistics
    recorded = evaluate(synthetic["strong"], recorded_gt, bootstrap=200, seed=1).statistics
    assert plain is not None and recorded is not None
    assert plain["clusters"] == videos and recorded["clusters"] == RECORDINGS
    assert "metadata.recording" in recorded["cluster_rule"]
    wider = [
        k
        for k, v in recorded["intervals"].items()
        if v
        and plain["intervals"].get(k)
        and v[1] - v[0] > (lambda p: p[1] - p[0])(plain["intervals"][k])
    ]
    assert len(wider) >= 0.8 * sum(1 for v in recorded["intervals"].values() if v)
    assert set(recorded["widened"]) >= set(wider)  # 6 clusters: every such interval is widened


def test_a_recording_of_the_wrong_kind_is_named(synthetic: dict[str, Path], tmp_path: Path) -> None:
    records = json.loads(synthetic["ground_truth"].read_text())
    records[3]["metadata"]["recording"] = ["a", "b"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    with pytest.raises(InvalidGroundTruthError) as caught:
        load_ground_truth(bad)
    assert "record 3" in str(caught.value) and "recording" in str(caught.value)
