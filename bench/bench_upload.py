"""Benchmark: does one large upload freeze the server? (issue: trust, round 2, item 8)

Starts a real ``medvidbench serve`` (embedded defaults: SQLite, consumer threads in the same
process), makes a valid prediction file of about ``--mb`` MB for its demo test set (every answer
of the 6,245-sample strong archetype, followed by random words), uploads it through the API,
and meanwhile asks ``/api/v1/health`` every 20 ms (open loop: each request is timed from when
it was due, so a stall counts against every request it delays). Prints the health check's
latency during the upload (median, p95, max), the upload's own time, and the server's resident
memory before and at its peak (VmHWM).

Target: health p95 under 100 ms during a maximum-size upload.

``--src DIR`` runs the server from another checkout's ``src`` (e.g. the commit before the fix,
checked out with ``git worktree add``), to measure before and after on one machine in one run.

Usage: python bench/bench_upload.py [--mb 168] [--src OLD/src]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx


def memory(pid: int) -> dict[str, int]:
    """Resident memory now and at its peak, in MiB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) // 1024
    return fields


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def padded_file(demo: Path, target_bytes: int, out: Path) -> int:
    records = json.loads((demo / "predictions_strong.json").read_text())
    base = len(json.dumps(records).encode())
    pad = max(0, (target_bytes - base) // len(records))
    rng = random.Random(0)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(5000)
    ]
    for r in records:  # word salad: as costly to compress and read as real model output
        filler = " ".join(rng.choices(words, k=pad // 5))
        r["prediction"] = (r["prediction"] + " " + filler)[: len(r["prediction"]) + pad]
    data = json.dumps(records).encode()
    out.write_bytes(data)
    return len(data)


def run(src: str | None, mb: int, tmp: Path) -> dict[str, object]:
    from serving import account_with_token, clean_env, serve  # beside this script

    env = clean_env(
        MEDVIDBENCH_MAX_SUBMISSION_BYTES=str((mb + 32) << 20), MEDVIDBENCH_QUOTA_PER_DAY="0"
    )
    if src:
        env["PYTHONPATH"] = src
    data = tmp / "data"
    token = account_with_token(data, env)
    with serve(data, env) as live:
        server, url = live.process, live.url
        size = padded_file(data / "demo" / "medvidbench", mb << 20, tmp / "big.json")
        before = memory(server.pid)
        latencies: list[float] = []
        done = threading.Event()

        def probe(client: httpx.Client, scheduled: float) -> None:
            client.get(f"{url}/api/v1/health")
            latencies.append(time.perf_counter() - scheduled)

        def poll() -> None:
            # Open loop: one request every 20 ms whatever the answers do, each timed from when
            # it was due, so a stall counts once per request it delays (no coordinated omission).
            with (
                httpx.Client(timeout=60, limits=httpx.Limits(max_connections=64)) as client,
                ThreadPoolExecutor(max_workers=64) as pool,
            ):
                due = time.perf_counter()
                while not done.is_set():
                    pool.submit(probe, client, due)
                    due += 0.02
                    time.sleep(max(0.0, due - time.perf_counter()))

        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(0.3)  # a few requests before, as a baseline inside the window
        started = time.perf_counter()
        with (tmp / "big.json").open("rb") as fh:
            answer = httpx.post(
                f"{url}/api/v1/submissions",
                headers={"Authorization": f"Bearer {token}"},
                files={"file": ("big.json", fh, "application/json")},
                data={"model_name": "Big upload"},
                timeout=600,
            )
        upload = time.perf_counter() - started
        done.set()
        poller.join()
        after = memory(server.pid)
        # The child process that validated the file (if the server used one), its own peak.
        child_peaks = [memory(c)["VmHWM"] for c in children(server.pid)]
    ordered = sorted(latencies)
    return {
        "status": answer.status_code,
        "file_mb": round(size / 2**20, 1),
        "upload_s": round(upload, 2),
        "health_requests": len(ordered),
        "health_median_ms": round(statistics.median(ordered) * 1000, 1),
        "health_p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1),
        "health_max_ms": round(ordered[-1] * 1000, 1),
        "rss_before_mib": before["VmRSS"],
        "rss_peak_mib": after["VmHWM"],
        "child_rss_peak_mib": max(child_peaks) if child_peaks else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=168)
    parser.add_argument("--src", default=None, help="Run the server from this src folder.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args.src, args.mb, Path(tmp))
    label = f"server from {args.src}" if args.src else "server from this checkout"
    print(f"{label}: {json.dumps(result)}")
    print(
        f"health p95 {result['health_p95_ms']} ms (target < 100 ms), max "
        f"{result['health_max_ms']} ms, over {result['health_requests']} requests during a "
        f"{result['file_mb']} MB upload of {result['upload_s']} s; RSS {result['rss_before_mib']} "
        f"-> peak {result['rss_peak_mib']} MiB (validating child's peak: "
        f"{result['child_rss_peak_mib']} MiB)"
    )


if __name__ == "__main__":
    main()
