"""The suite may break only what it started itself: no test or benchmark stops a shared service.

Fault tests start private PostgreSQL clusters and Redis servers (tests/server/private_services.py)
and restart those; this test keeps commands that stop the machine's own services out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
# Written split so that this file does not match itself.
FORBIDDEN = [
    "pg_ctl" + "cluster",  # Debian's wrapper for the machine's own clusters
    "redis" + "-cli",  # e.g. 'shutdown' of the machine's Redis
    "system" + "ctl",
    "service " + "postgresql",
    "service " + "redis",
]


@pytest.mark.parametrize("folder", ["tests", "bench"])
def test_no_test_or_benchmark_stops_a_shared_service(folder: str) -> None:
    offending = [
        f"{path.relative_to(ROOT)}: {word}"
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != Path(__file__).name
        for word in FORBIDDEN
        if word in path.read_text(encoding="utf-8")
    ]
    assert offending == []
