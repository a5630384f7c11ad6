"""Benchmark: a board under a paper launch's traffic (issue #36 item 3).

A ``--entries``-entry community board (each entry with a stored bootstrap, as scoring leaves
it) served by ``medvidbench serve`` on the embedded default (SQLite) and on PostgreSQL (the
test database, a schema of its own). For each number of clients (``--clients``), in the same
run: ``/api/v1/health/live`` (the floor: no database, no page) and the board page as every
visitor sees it, each for ``--seconds``; throughput, p50/p95/p99 latency, errors, and the
board's throughput as a share of health's. Then the same board page with ``If-None-Match``
(a browser that has it: 304). The load generator shares the machine's cores with the server.

Target: at 50 clients the board's throughput at least half of health's, p95 under 100 ms,
no errors, on both deployments.

The load generator is ``wrk`` when it is installed (``apt-get install wrk``: a C program that
leaves the cores to the server), else httpx in this process (``--generator python``, which on
2 cores takes about half the CPU and so doubles every latency).

Usage: python bench/bench_board_load.py [--entries 1000] [--clients 1,10,50] [--seconds 10]
    [--skip-postgres] [--generator wrk|python]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

BOARD = "/b/medvidbench/board/community"
LIVE = "/api/v1/health/live"


async def hammer(url: str, clients: int, seconds: float, headers: dict[str, str]) -> dict[str, Any]:
    """``clients`` connections asking for ``url`` one after another for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        stop = time.perf_counter() + seconds

        async def one() -> None:
            nonlocal errors
            while time.perf_counter() < stop:
                began = time.perf_counter()
                try:
                    response = await client.get(url, headers=headers)
                    if response.status_code not in (200, 304):
                        errors += 1
                except httpx.HTTPError:
                    errors += 1
                latencies.append(time.perf_counter() - began)

        began = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(clients)))
        wall = time.perf_counter() - began
    latencies.sort()

    def at(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

    return {
        "rps": len(latencies) / wall,
        "p50": statistics.median(latencies) * 1000,
        "p95": at(0.95),
        "p99": at(0.99),
        "errors": errors,
        "requests": len(latencies),
    }


_WRK_REPORT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT %d %d %d %d %.1f %.1f %.1f\\n", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end
"""


def hammer_wrk(url: str, clients: int, seconds: float, headers: dict[str, str]) -> dict[str, Any]:
    """As :func:`hammer`, by ``wrk`` (a C load generator: one thread, ``clients``
    connections), so that the generator takes a small share of the cores it shares with the
    server. A status of 400 or above is an error (wrk's rule); 304 is not."""
    import subprocess

    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(_WRK_REPORT)
    try:
        # wrk takes whole seconds
        command = ["wrk", "-t1", f"-c{clients}", f"-d{max(1, round(seconds))}s", "--timeout", "30s"]
        command += ["-s", script.name]
        for key, value in headers.items():
            command += ["-H", f"{key}: {value}"]
        done = subprocess.run([*command, url], capture_output=True, text=True, check=True)
    finally:
        Path(script.name).unlink()
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    requests, micros, failed, status, p50, p95, p99 = (float(v) for v in line.split()[1:])
    return {
        "rps": requests / (micros / 1e6),
        "p50": p50 / 1000,
        "p95": p95 / 1000,
        "p99": p99 / 1000,
        "errors": int(failed + status),
        "requests": int(requests),
    }


def _prepare(data: Path, database_url: str | None, entries: int) -> None:
    from board_fixture import populate_board  # beside this script
    from medvidbench.core.config import Settings
    from medvidbench.server.runtime import Runtime
    from medvidbench.server.services.accounts import create_user
    from medvidbench.server.services.catalogue import seed_test_sets
    from medvidbench.server.services.test_sets import current_benchmark
    from medvidbench.server.store.db import transaction, upgrade

    runtime = Runtime(Settings(data_dir=data, database_url=database_url))  # type: ignore[call-arg]
    upgrade(runtime.engine)
    seed_test_sets(runtime)
    bench = current_benchmark(runtime, "medvidbench")
    with transaction(runtime.sessions) as session:
        user = create_user(session, "bench", "bench-password-123", team="Bench")
    populate_board(runtime, bench.id, user.id, entries, replicates=200)
    runtime.engine.dispose()


def deployment(name: str, database_url: str | None, args: argparse.Namespace) -> None:
    from serving import clean_env, serve  # beside this script

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        _prepare(data, database_url, args.entries)
        env = clean_env(**({"MEDVIDBENCH_DATABASE_URL": database_url} if database_url else {}))
        with serve(data, env, timeout=300) as live:
            first = httpx.get(live.url + BOARD, timeout=60)
            assert first.status_code == 200, first.status_code
            tag = first.headers.get("etag", "")
            print(f"[{name}] {args.entries:,}-entry board, page {len(first.content) / 1024:.0f} KB")
            print(f"  {'clients':>7} {'path':<34} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} "
                  f"{'p99 ms':>7} {'errors':>6} {'of health':>9}")  # fmt: skip
            for clients in args.clients:
                runs = {}
                for label, path, headers in (
                    ("health/live", LIVE, {}),
                    ("board", BOARD, {}),
                    ("board, If-None-Match (304)", BOARD, {"If-None-Match": tag} if tag else {}),
                ):
                    if args.generator == "wrk":
                        found = hammer_wrk(live.url + path, clients, args.seconds, headers)
                    else:
                        found = asyncio.run(hammer(live.url + path, clients, args.seconds, headers))
                    runs[label] = found
                    share = found["rps"] / runs["health/live"]["rps"]
                    print(
                        f"  {clients:>7} {label:<34} {found['rps']:>7.0f} {found['p50']:>7.1f} "
                        f"{found['p95']:>7.1f} {found['p99']:>7.1f} {found['errors']:>6} "
                        f"{share:>9.0%}"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--clients", default="1,10,50")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument(
        "--generator",
        choices=("wrk", "python"),
        default="wrk" if shutil.which("wrk") else "python",
        help="The load generator: wrk (Debian's package; the default when installed) or "
        "httpx in this process (heavier: it takes cores the server would use).",
    )
    args = parser.parse_args()
    print(f"load generator: {args.generator}")
    args.clients = [int(c) for c in args.clients.split(",")]
    deployment("embedded: SQLite", None, args)
    if args.skip_postgres:
        return
    from serving import postgres_schema  # beside this script

    with postgres_schema("boardload") as url:
        deployment("PostgreSQL", url, args)


if __name__ == "__main__":
    main()
