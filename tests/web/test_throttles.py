"""Log-in and sign-up throttles that one IPv6 /64 or many addresses cannot step around.

Before: both throttles counted exact addresses, so 30 wrong passwords for one account from 30
addresses of one /64 (which any home connection holds) got 30 x 401 and then the right one
worked, and 6 sign-ups from one /64 all succeeded.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient
from httpx import Response

from medvidbench.server.runtime import Runtime
from medvidbench.server.web.limits import network_of
from tests.server.conftest import make_user
from tests.web.conftest import csrf

ONE_64 = [f"2001:db8:1:2::{n:x}" for n in range(1, 40)]  # one home connection's addresses


def _attempt(app: FastAPI, address: str, username: str, password: str) -> Response:
    visitor = TestClient(app, client=(address, 40000), follow_redirects=False)
    form = {"username": username, "password": password, "csrf": csrf(visitor), "next": "/"}
    return visitor.post("/login", data=form)


def _guesses(app: FastAPI, addresses: list[str], username: str) -> list[int]:
    return [_attempt(app, a, username, "not-the-password").status_code for a in addresses]


def test_guessing_from_one_ipv6_64_is_throttled(client: TestClient, web_runtime: Runtime) -> None:
    make_user(web_runtime, "target")
    statuses = _guesses(client.app, ONE_64[:30], "target")  # type: ignore[arg-type]
    assert statuses == [401] * 10 + [429] * 20
    right = _attempt(client.app, ONE_64[35], "target", "target-password-123")  # type: ignore[arg-type]
    assert right.status_code == 429 and int(right.headers["Retry-After"]) > 0
    assert "too many failed attempts" in right.text
    # another /64 (another household) is not held back by this one's guesses
    elsewhere = _attempt(client.app, "2001:db8:1:3::1", "target", "target-password-123")  # type: ignore[arg-type]
    assert elsewhere.status_code == 303


def test_guessing_one_account_from_many_addresses_is_throttled(
    client: TestClient, web_runtime: Runtime
) -> None:
    make_user(web_runtime, "popular")
    spread = [f"198.51.100.{n}" for n in range(1, 31)]
    assert _guesses(client.app, spread, "popular") == [401] * 20 + [429] * 10  # type: ignore[arg-type]
    right = _attempt(client.app, "203.0.113.9", "popular", "popular-password-123")  # type: ignore[arg-type]
    assert right.status_code == 429 and "Retry-After" in right.headers
    # a name nobody has is throttled alike: the answers do not tell which accounts exist
    assert _guesses(client.app, spread, "nobody-here") == [401] * 20 + [429] * 10  # type: ignore[arg-type]


def test_sign_ups_from_one_ipv6_64_are_throttled(client: TestClient, web_runtime: Runtime) -> None:
    web_runtime.settings.signup_per_address_per_day = 3
    statuses = []
    for n, address in enumerate(ONE_64[:6]):
        visitor = TestClient(client.app, client=(address, 40000), follow_redirects=False)
        form = {
            "username": f"sock{n}",
            "password": f"sock{n}-password-1",
            "csrf": csrf(visitor, "/signup"),
        }
        statuses.append(visitor.post("/signup", data=form).status_code)
    assert statuses == [303] * 3 + [429] * 3
    other = TestClient(client.app, client=("2001:db8:9::1", 40000), follow_redirects=False)
    form = {"username": "neighbour", "password": "neighbour-pass-1", "csrf": csrf(other, "/signup")}
    assert other.post("/signup", data=form).status_code == 303


def test_a_client_is_counted_by_its_network() -> None:
    assert network_of("2001:DB8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64"
    assert network_of("2001:db8:1:2::1") == network_of("2001:db8:1:2:8000::1")
    assert network_of("2001:db8:1:3::1") != network_of("2001:db8:1:2::1")
    assert network_of("192.0.2.7") == "192.0.2.7"
    assert network_of("::ffff:192.0.2.7") == "192.0.2.7"
    assert network_of("testclient") == "testclient"
