"""Benchmark: load on a real server on 127.0.0.1 (issue: trustworthy under load).

Measures, against ``medvidbench serve`` started here (loopback only, bounded request counts):
board-page throughput and latency percentiles under concurrency, and sustained submissions per
minute (6,245-sample files, upload to scored), on the embedded default (SQLite, in-process
jobs) and on PostgreSQL + Redis with two ``medvidbench worker`` processes.

Usage: python bench/bench_load.py [--requests 400] [--concurrency 16] [--submissions 24]
       [--skip-scaled]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from serving import CLI, account_with_token, serve  # beside this script


async def hammer(url: str, requests: int, concurrency: int) -> dict[str, float]:
    latencies: list[float] = []
    queue = list(range(requests))
    async with httpx.AsyncClient(timeout=30) as client:

        async def one() -> None:
            while queue:
                queue.pop()
                started = time.perf_counter()
                response = await client.get(url)
                response.raise_for_status()
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    latencies.sort()
    return {
        "rps": requests / wall,
        "p50": statistics.median(latencies) * 1000,
        "p95": latencies[int(len(latencies) * 0.95) - 1] * 1000,
    }


def variants(path: Path, n: int) -> list[bytes]:
    records = json.loads(path.read_text())
    out = []
    for i in range(n):
        records[0]["prediction"] = f"variant {uuid.uuid4().hex} {i}"
        out.append(json.dumps(records).encode())
    return out


async def submit_all(url: str, token: str, files: list[bytes], parallel: int) -> float:
    headers = {"Authorization": f"Bearer {token}"}
    ids: list[int] = []
    sem = asyncio.Semaphore(parallel)
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=120) as client:

        async def send(i: int, data: bytes) -> None:
            async with sem:
                r = await client.post(
                    f"{url}/api/v1/submissions",
                    headers=headers,
                    files={"file": (f"p{i}.json", data)},
                    data={"model_name": f"load-{uuid.uuid4().hex[:8]}"},
                )
                r.raise_for_status()
                ids.append(r.json()["id"])

        await asyncio.gather(*(send(i, d) for i, d in enumerate(files)))
        pending = set(ids)
        while pending:
            for sid in list(pending):
                body = (await client.get(f"{url}/api/v1/submissions/{sid}", headers=headers)).json()
                if body["status"] in ("scored", "complete", "failed", "rejected"):
                    pending.discard(sid)
            await asyncio.sleep(0.1)
    return time.perf_counter() - started


def scenario(name: str, env: dict[str, str], args: argparse.Namespace, workers: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        env = {**env, "MEDVIDBENCH_QUOTA_PER_DAY": "0", "MEDVIDBENCH_QUOTA_PER_MONTH": "0"}
        subprocess.run(
            [*CLI, "db", "upgrade", "--data-dir", str(data)],
            env=env,
            check=True,
            capture_output=True,
        )
        secret = account_with_token(data, env)
        with serve(data, env, args=("--workers", "0" if workers else "2")) as live:
            extra = [
                subprocess.Popen(
                    [*CLI, "worker", "--workers", "2", "--data-dir", str(data)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for _ in range(workers)
            ]
            try:
                files = variants(
                    data / "demo" / "medvidbench" / "predictions_weak.json", args.submissions
                )
                seconds = asyncio.run(submit_all(live.url, secret, files, parallel=4))
                print(
                    f"[{name}] {args.submissions} submissions of 6,245 samples, upload to "
                    f"scored: {seconds:.1f} s = {args.submissions / seconds * 60:.0f} "
                    "submissions/minute"
                )
                for page in ("/b/medvidbench/board/official", "/b/medvidbench/board/community"):
                    r = asyncio.run(hammer(live.url + page, args.requests, args.concurrency))
                    print(
                        f"[{name}] GET {page} x{args.requests}, concurrency {args.concurrency}: "
                        f"{r['rps']:.0f} requests/s, p50 {r['p50']:.1f} ms, p95 {r['p95']:.1f} ms"
                    )
            finally:
                for p in extra:
                    p.send_signal(signal.SIGTERM)
                for p in extra:
                    p.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--submissions", type=int, default=24)
    parser.add_argument("--skip-scaled", action="store_true")
    args = parser.parse_args()
    base = dict(os.environ)
    scenario("embedded: SQLite, in-process jobs", base, args, workers=0)
    if args.skip_scaled:
        return
    from sqlalchemy import create_engine, text

    schema = f"load_{uuid.uuid4().hex[:10]}"
    admin = create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/test")
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    import redis

    redis.Redis.from_url("redis://127.0.0.1:6379/13").flushdb()
    try:
        scaled = {
            **base,
            "MEDVIDBENCH_DATABASE_URL": "postgresql+psycopg://postgres@127.0.0.1"
            f":5432/test?options=-csearch_path%3D{schema}",
            "MEDVIDBENCH_QUEUE_URL": "redis://127.0.0.1:6379/13",
        }
        scenario("PostgreSQL + Redis, 2 workers", scaled, args, workers=2)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        redis.Redis.from_url("redis://127.0.0.1:6379/13").flushdb()


if __name__ == "__main__":
    main()
