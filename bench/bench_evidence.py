"""Benchmark: what per-item evidence costs (issue #33 item 1: a budget of ~37 KB per
MedVidBench evaluation).

For each synthetic archetype of a full-size MedVidBench test set (6,245 questions by default,
no judge: the judged metrics are stored as missing), and for every other built-in benchmark at
its demo size: the evidence's stored size (``Evidence.encode``), the offline report's
``per_item`` JSON size, the time to gather it (an evaluation with ``per_item`` less one
without, run in turn), to encode, to decode, and to write it into a SQLite table in its own
transaction (as a server stores it beside the evaluation). Medians over ``--repeat`` runs.

Usage: python bench/bench_evidence.py [--samples 6245] [--others N] [--repeat 5]
(``--others`` sizes the other benchmarks' synthetic sets; default: each one's demo size.)
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from medvidbench import benchmarks
from medvidbench.core.errors import InvalidSubmissionError
from medvidbench.core.evidence import decode, items_of
from medvidbench.library import evaluate


def _median_seconds(work: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        out = work()
        times.append(time.perf_counter() - began)
    return statistics.median(times), out


def _paired(path: Path, truth: Path, slug: str, repeat: int) -> tuple[float, float, Any]:
    """The median time of an evaluation without evidence, and the median of the extra time
    with it (the two run in turn, ``repeat`` times)."""
    plain, extra, report = [], [], None
    for _ in range(repeat):
        began = time.perf_counter()
        evaluate(path, truth, benchmark=slug)
        middle = time.perf_counter()
        report = evaluate(path, truth, benchmark=slug, per_item=True)
        plain.append(middle - began)
        extra.append(time.perf_counter() - middle - (middle - began))
    return statistics.median(plain), statistics.median(extra), report


def _write_cost(blob: bytes, repeat: int, folder: Path) -> float:
    db = sqlite3.connect(folder / "evidence.sqlite3")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS evidence (id INTEGER PRIMARY KEY, data BLOB)")
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        with db:
            db.execute("INSERT INTO evidence (data) VALUES (?)", (blob,))
        times.append(time.perf_counter() - began)
    db.close()
    return statistics.median(times)


def _one(slug: str, samples: int | None, repeat: int, folder: Path) -> list[dict[str, Any]]:
    bench = benchmarks.get(slug)
    assert bench.demo is not None
    where = folder / slug
    where.mkdir()
    files = bench.demo.synthesise(where, samples, 0)
    truth = files["ground_truth"]
    rows = []
    for name, path in files.items():
        if name == "ground_truth" or not path.name.startswith("predictions"):
            continue
        try:
            evaluate(path, truth, benchmark=slug)  # warm: models, parsers, caches
        except InvalidSubmissionError:  # an archetype refused as it stands (a partial file)
            continue
        plain, kept, report = _paired(path, truth, slug, repeat)
        evidence = report.evidence
        encode_s, blob = _median_seconds(evidence.encode, repeat)
        items = items_of(bench, bench.load_ground_truth(truth).samples)
        decode_s, _ = _median_seconds(lambda b=blob, i=items: decode(b, i), repeat)
        rows.append(
            {
                "benchmark": slug,
                "file": path.name,
                "items": len(evidence.keys),
                "metrics": len(evidence.metrics),
                "stored_kb": len(blob) / 1024,
                "json_kb": len(json.dumps(evidence.to_dict())) / 1024,
                "gather_ms": kept * 1000,
                "evaluate_ms": plain * 1000,
                "encode_ms": encode_s * 1000,
                "decode_ms": decode_s * 1000,
                "write_ms": _write_cost(blob, repeat, folder) * 1000,
            }
        )
    return rows


def _incompressible(samples: int, folder: Path) -> int:
    """The stored size of a MedVidBench evaluation whose every metric (the judged ones too)
    has a random value on every item of its task."""
    bench = benchmarks.get("medvidbench")
    assert bench.demo is not None
    files = bench.demo.synthesise(folder / "worst", samples, 0)
    report = evaluate(files["strong"], files["ground_truth"], benchmark=bench, per_item=True)
    evidence = report.evidence
    assert evidence is not None
    rng = np.random.default_rng(0)
    for m in evidence.metrics.values():
        m.values = rng.random(len(m.values)).astype(np.float32)
        m.status = np.zeros(len(m.values), dtype=np.uint8)
    return len(evidence.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=6245, help="MedVidBench questions")
    parser.add_argument(
        "--others", type=int, default=None, help="the other benchmarks' items (default: demo size)"
    )
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="mvb-evidence-"))
    rows = _one("medvidbench", args.samples, args.repeat, folder)
    for slug in benchmarks.slugs():
        if slug != "medvidbench" and benchmarks.get(slug).demo is not None:
            rows += _one(slug, args.others, args.repeat, folder)
    head = (
        f"{'benchmark':<13} {'file':<28} {'items':>6} {'metrics':>7} {'stored KB':>9} "
        f"{'JSON KB':>8} {'gather ms':>9} {'evaluate ms':>11} {'encode ms':>9} "
        f"{'decode ms':>9} {'write ms':>8}"
    )
    print(head)
    for r in rows:
        print(
            f"{r['benchmark']:<13} {r['file']:<28} {r['items']:>6} {r['metrics']:>7} "
            f"{r['stored_kb']:>9.1f} {r['json_kb']:>8.1f} {r['gather_ms']:>9.1f} "
            f"{r['evaluate_ms']:>11.1f} {r['encode_ms']:>9.2f} {r['decode_ms']:>9.2f} "
            f"{r['write_ms']:>8.2f}"
        )
    worst = _incompressible(args.samples, folder)
    print(
        f"MedVidBench, every metric scored on every item with random values (judged ones too, "
        f"the incompressible case): {worst / 1024:.1f} KB"
    )
    sizes = [r["stored_kb"] for r in rows if r["benchmark"] == "medvidbench"]
    middle = statistics.median(sizes)
    print(
        f"MedVidBench ({args.samples:,} items): stored evidence median {middle:.1f} KB, "
        f"largest {max(sizes):.1f} KB per evaluation (budget 37 KB)"
    )


if __name__ == "__main__":
    main()
