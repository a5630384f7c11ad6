"""Benchmark: storing and reading an upload in the data folder against in the database.

An upload of about ``--mb`` MB (a synthetic prediction file repeated) is staged (compressed into
``incoming/``, as every upload is), then put in place inside a transaction and read back whole,
with the folder store and with the database store (the ``stored_files`` table, gzip parts of
4 MiB). Printed per store: the median seconds of place and of read over ``--rounds`` rounds, the
compressed size, and the peak Python memory (tracemalloc) of place and of read: place streams
part by part, read holds the file once decompressed.

Needs a PostgreSQL server (``MEDVIDBENCH_TEST_POSTGRES``, default the machine's on 127.0.0.1,
database ``test``); a schema is made for the run and dropped after.

Usage: python bench/bench_stored_files.py [--mb 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from medvidbench.core.config import Settings
from medvidbench.server.runtime import Runtime


def payload(mb: int) -> bytes:
    """JSON-like records, as compressible as a real prediction file (not one repeated byte)."""
    rows = [
        f'{{"id": "video_{i:07d}", "qa_type": "tal", "prediction": "from {i % 977}.{i % 7} to '
        f'{(i * 31) % 1000}.{i % 3} seconds, the surgeon dissects tissue {i % 13}"}}'
        for i in range(mb * 8000)
    ]
    return ("[" + ",\n".join(rows) + "]").encode()[: mb << 20]


def measure(runtime: Runtime, data: bytes, rounds: int) -> dict[str, float]:
    places, reads, peaks_place, peaks_read, size = [], [], [], [], 0
    for n in range(rounds):
        staged = runtime.stage(data)
        size = staged.stat().st_size
        tracemalloc.start()
        started = time.perf_counter()
        with runtime.sessions.begin() as session:
            runtime.files.place(session, "submission", n + 1, staged)
        places.append(time.perf_counter() - started)
        peaks_place.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        tracemalloc.start()
        started = time.perf_counter()
        back = runtime.files.read("submission", n + 1)
        reads.append(time.perf_counter() - started)
        peaks_read.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert back == data
        del back
    return {
        "place_s": statistics.median(places),
        "read_s": statistics.median(reads),
        "compressed_mb": size / 2**20,
        "place_peak_mb": max(peaks_place) / 2**20,
        "read_peak_mb": max(peaks_read) / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    data = payload(args.mb)
    from serving import postgres_schema  # beside this script

    print(f"upload: {len(data) / 2**20:.0f} MiB, {args.rounds} rounds")
    with postgres_schema("bench") as url, tempfile.TemporaryDirectory() as tmp:
        for store in ("folder", "database"):
            runtime = Runtime(
                Settings(data_dir=Path(tmp) / store, database_url=url, file_store=store)  # type: ignore[call-arg]
            )
            runtime.upgrade_database()
            got = measure(runtime, data, args.rounds)
            print(
                f"{store:9} place {got['place_s']:.3f} s  read {got['read_s']:.3f} s  "
                f"stored {got['compressed_mb']:.1f} MiB  peak memory: place "
                f"{got['place_peak_mb']:.1f} MiB, read {got['read_peak_mb']:.1f} MiB"
            )
            runtime.engine.dispose()


if __name__ == "__main__":
    main()
