"""Benchmark: the website over real HTTP (issue: speed, item 6).

Fills a data folder with a ``--entries``-entry community board (each scored entry with a
stored bootstrap of ``--replicates`` replicates, as scoring leaves it), starts ``medvidbench
serve`` on it, and requests each page ``--repeat`` times over HTTP from this process, the first
request included (it is a visitor's first view after a start). Prints the median and p95 per
path and each page's size. Then adds one entry (a reported row) and times the next board
request: the cache is rebuilt for the new generation, and the page shows the new row.

Targets: a 1,000-entry board page under 50 ms p95; every page under 300 KB.

Usage: python bench/bench_web.py [--entries 1000] [--repeat 50] [--replicates 1000]
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

import httpx

PATHS = (
    "/b/medvidbench/board/community",
    "/b/medvidbench/board/official",
    "/b/medvidbench/board/community?sort=nap_acc&order=asc&page=5",
    "/api/v1/boards/community",
    "/b/medvidbench/about",
    "/b/medvidbench/compare?entries=1,2",
    "/login",
)


def main() -> None:
    from board_fixture import populate_board  # beside this script

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument(
        "--replicates", type=int, default=1000, help="stored per entry (0: no intervals)"
    )
    args = parser.parse_args()

    from medvidbench.core.config import Settings
    from medvidbench.server.runtime import Runtime
    from medvidbench.server.services.accounts import create_user
    from medvidbench.server.services.catalogue import seed_test_sets
    from medvidbench.server.services.entries import add_reported
    from medvidbench.server.services.test_sets import current_benchmark
    from medvidbench.server.store.db import transaction, upgrade

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        runtime = Runtime(Settings(data_dir=data))
        upgrade(runtime.engine)
        seed_test_sets(runtime)  # every hosted benchmark's demo test set
        bench = current_benchmark(runtime, "medvidbench")
        with transaction(runtime.sessions) as session:
            user = create_user(session, "bench", "bench-password-123", team="Bench")
        populate_board(runtime, bench.id, user.id, args.entries, replicates=args.replicates)
        from serving import clean_env, serve  # beside this script

        with (
            serve(data, clean_env()) as live,
            httpx.Client(base_url=live.url, timeout=30) as client,
        ):
            for path in PATHS:
                runs, size = [], 0
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    response = client.get(path)
                    runs.append(time.perf_counter() - started)
                    size = len(response.content)
                    assert response.status_code == 200, (path, response.status_code)
                ordered = sorted(runs)
                p95 = ordered[math.ceil(0.95 * len(ordered)) - 1]  # nearest rank
                print(
                    f"{path:<50} first {runs[0] * 1000:7.1f} ms  median "
                    f"{statistics.median(runs) * 1000:6.1f} ms  p95 {p95 * 1000:6.1f} ms  "
                    f"{size / 1024:7.1f} KB"
                )
            add_reported(
                runtime,
                None,
                "Changed Model",
                "Lab",
                {"cvs_acc": 0.99},
                source="bench",
                kind="community",
            )
            started = time.perf_counter()
            page = client.get("/b/medvidbench/board/community?q=Changed+Model").text
            print(
                f"after a change: board rebuilt in {(time.perf_counter() - started) * 1000:.1f}"
                f" ms, new row shown: {'Changed Model' in page}"
            )
    print(f"community board: {args.entries:,} entries; pages hold 100 rows each")


if __name__ == "__main__":
    main()
