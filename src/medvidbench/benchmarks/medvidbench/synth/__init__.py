"""Synthetic MedVidBench: a test set in the real format and predictions of model archetypes.

This is the project's test bed and the demo data of the embedded server. Nothing in it is real
clinical data; every page that shows it says so.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from medvidbench.benchmarks.medvidbench import ARCHETYPES
from medvidbench.benchmarks.medvidbench.synth.predictions import generate_predictions
from medvidbench.benchmarks.medvidbench.synth.testset import generate_ground_truth, variant_counts

__all__ = [
    "ARCHETYPES",
    "generate_ground_truth",
    "generate_predictions",
    "variant_counts",
    "write_synthetic",
]


def write_synthetic(
    out_dir: str | Path,
    samples: int | None = None,
    seed: int = 0,
    archetypes: tuple[str, ...] = ARCHETYPES,
) -> dict[str, Path]:
    """Write ``ground_truth.json`` (``samples`` items; None: the published test set's 6,245)
    and one ``predictions_<archetype>.json`` per archetype.

    Returns:
        The written paths, keyed ``ground_truth`` and by archetype name.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    gt = generate_ground_truth(6245 if samples is None else samples, seed)
    written = {"ground_truth": out / "ground_truth.json"}
    written["ground_truth"].write_bytes(msgspec.json.encode(gt))
    for name in archetypes:
        path = out / f"predictions_{name}.json"
        path.write_bytes(msgspec.json.encode(generate_predictions(gt, name, seed)))
        written[name] = path
    return written
