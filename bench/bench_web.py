"""Benchmark: the website (issue: website and REST API).

Targets: the board page of a 1,000-entry board served in under 200 ms of server time; every
page's HTML under 300 KB. Requests go through the ASGI app in-process (server time, no network),
on the embedded default (SQLite). Prints medians of repeated runs and the size of each page.

Usage: python bench/bench_web.py [--entries 1000] [--repeat 9]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    from board_fixture import populate_board  # beside this script

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()

    from fastapi.testclient import TestClient

    from medvidbench.accounts import create_user
    from medvidbench.config import Settings
    from medvidbench.leaderboards import bootstrap
    from medvidbench.runtime import Runtime
    from medvidbench.store.db import transaction, upgrade
    from medvidbench.web.app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        runtime = Runtime(Settings(data_dir=Path(tmp)))
        upgrade(runtime.engine)
        bench = bootstrap(runtime)
        with transaction(runtime.sessions) as session:
            user = create_user(session, "bench", "bench-password-123", team="Bench")
        populate_board(runtime, bench.id, user.id, args.entries)
        with TestClient(create_app(runtime)) as client:
            for path in (
                "/board/community",
                "/board/official",
                "/about",
                "/compare?entries=1,2",
                "/board/community?sort=nap_acc&order=asc&page=5",
                "/login",
                "/api/v1/boards/community",
            ):
                client.get(path)  # warm caches and templates
                runs, size = [], 0
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    response = client.get(path)
                    runs.append(time.perf_counter() - started)
                    size = len(response.content)
                    assert response.status_code == 200
                print(
                    f"{path:<50} median {statistics.median(runs) * 1000:7.1f} ms  "
                    f"(min {min(runs) * 1000:6.1f}, max {max(runs) * 1000:6.1f})  "
                    f"{size / 1024:8.1f} KB"
                )
        print(f"community board: {args.entries:,} entries; pages hold 100 rows each")


if __name__ == "__main__":
    main()
