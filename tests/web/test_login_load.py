"""Password hashing never stalls the server: a real ``medvidbench serve`` under login load.

argon2 takes a few hundred milliseconds of CPU by design. Run on the event loop, four anonymous
connections posting logins kept every other request waiting (health took seconds).
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.web.live import Live, create_user, live_server

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
LOGINS = 4  # concurrent login connections, as in the report
ROUNDS = 4  # logins each connection sends, one after another


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    data: Path = tmp_path_factory.mktemp("login-load")
    create_user(data, "someone", "someone-password-123")
    with live_server(data) as live:
        yield live


def _guess(live: Live, who: int, durations: list[float], statuses: list[int]) -> None:
    with httpx.Client(base_url=live.url, timeout=120) as client:
        match = CSRF.search(client.get("/login").text)
        assert match
        for n in range(ROUNDS):
            # random names, as an anonymous attacker would send (no throttle is reached)
            name = f"nobody-{who}-{n}"
            form = {"username": name, "password": "wrong-guess", "csrf": match.group(1)}
            started = time.perf_counter()
            statuses.append(client.post("/login", data=form).status_code)
            durations.append(time.perf_counter() - started)


def test_health_is_answered_while_logins_are_verified(server: Live) -> None:
    durations: list[float] = []
    statuses: list[int] = []
    guessers = [
        threading.Thread(target=_guess, args=(server, n, durations, statuses))
        for n in range(LOGINS)
    ]
    for t in guessers:
        t.start()
    waits: list[float] = []
    with httpx.Client(base_url=server.url, timeout=120) as client:
        while any(t.is_alive() for t in guessers) and len(waits) < 2000:
            started = time.perf_counter()
            assert client.get("/api/v1/health").status_code == 200
            waits.append(time.perf_counter() - started)
            time.sleep(0.01)  # a visitor's pace, not a flood
    for t in guessers:
        t.join()
    assert statuses == [401] * (LOGINS * ROUNDS)
    login = statistics.median(durations)
    health = statistics.median(waits)
    print(f"health median {health * 1000:.1f} ms, max {max(waits) * 1000:.0f} ms ({len(waits)});")
    print(f"login median {login * 1000:.0f} ms ({len(durations)})")
    # Each login verifies one argon2 hash; health verifies none. On the event loop, health
    # queued behind the hashes and took about as long as a login (or longer); off it, health
    # takes a small fraction of one, however loaded the machine.
    assert health < login / 5, (
        f"health took {health * 1000:.0f} ms (median of {len(waits)}) while a login took "
        f"{login * 1000:.0f} ms (median of {len(durations)})"
    )
