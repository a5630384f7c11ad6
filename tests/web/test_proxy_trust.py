"""Whose X-Forwarded-* headers count: a real `medvidbench serve` on 127.0.0.1, and a proxy on
another loopback address (127.0.0.2) that is trusted (MEDVIDBENCH_TRUSTED_PROXIES) or not.

Through a trusted proxy the visitor's address (the sign-up throttle) and scheme (Secure cookies,
the same-origin check) are the forwarded ones; the same headers from any other address change
nothing. The app applies the setting itself too, for ASGI servers other than uvicorn.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from medvidbench.server.runtime import Runtime
from medvidbench.server.web.app import create_app
from medvidbench.server.web.proxies import ForwardedHeaders
from tests.web.conftest import CSRF
from tests.web.live import create_user, live_server

PROXY = "127.0.0.2"  # the proxy's own address: loopback, another one than the server's


@contextmanager
def via_proxy(url: str) -> Iterator[httpx.Client]:
    """A client whose connections come from the proxy's address."""
    transport = httpx.HTTPTransport(local_address=PROXY)
    with httpx.Client(base_url=url, transport=transport, follow_redirects=False) as c:
        yield c


def _csrf(client: httpx.Client, path: str) -> str:
    match = CSRF.search(client.get(path).text)
    assert match, f"no CSRF token on {path}"
    return match.group(1)


def _sign_ups(url: str, forwarded: list[str]) -> list[int]:
    statuses = []
    for n, visitor in enumerate(forwarded):
        with via_proxy(url) as client:  # a new visitor each time: their own session
            form = {"username": f"visitor{n}", "password": f"visitor{n}-password-1"}
            form["csrf"] = _csrf(client, "/signup")
            answer = client.post("/signup", data=form, headers={"X-Forwarded-For": visitor})
            statuses.append(answer.status_code)
    return statuses


def _login(url: str, headers: dict[str, str]) -> httpx.Response:
    with via_proxy(url) as client:
        form = {"username": "proxied", "password": "proxied-password-1", "next": "/"}
        form["csrf"] = _csrf(client, "/login")
        return client.post("/login", data=form, headers=headers)


VISITORS = ["198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4"]
HTTPS = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.7"}


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-proxy", "untrusted-proxy"])
def test_forwarded_headers_count_only_from_a_trusted_proxy(tmp_path: Path, trusted: bool) -> None:
    data = tmp_path / "data"
    create_user(data, "proxied", "proxied-password-1")
    env = {"MEDVIDBENCH_TRUSTED_PROXIES": PROXY if trusted else "127.0.0.1"}
    with live_server(data, env=env) as live:
        statuses = _sign_ups(live.url, VISITORS)
        # four visitors behind a trusted proxy are four addresses (3 sign-ups each a day);
        # from an untrusted one, the forged headers are ignored and it is one address
        assert statuses == ([303] * 4 if trusted else [303] * 3 + [429])

        logged_in = _login(live.url, HTTPS)
        assert logged_in.status_code == 303, logged_in.text
        cookie = logged_in.headers["set-cookie"].lower()
        assert ("; secure" in cookie) is trusted, cookie

        # the same-origin check: once the request is https, an http page is another origin
        host = re.sub(r"^http://", "", live.url)
        plain_page = _login(live.url, {**HTTPS, "Origin": f"http://{host}"})
        assert plain_page.status_code == (403 if trusted else 303)
        secure_page = _login(live.url, {**HTTPS, "Origin": f"https://{host}"})
        assert secure_page.status_code == 303
        foreign = _login(live.url, {**HTTPS, "Origin": "https://evil.example"})
        assert foreign.status_code == 403


def test_the_app_applies_the_setting_under_any_server(web_runtime: Runtime) -> None:
    """Without uvicorn's middleware in front (TestClient: another ASGI server), the app's own
    reads the same setting."""
    from tests.server.conftest import make_user

    make_user(web_runtime, "elsewhere")
    for trusted in (PROXY, "127.0.0.1"):
        web_runtime.settings.trusted_proxies = trusted
        client = TestClient(create_app(web_runtime), client=(PROXY, 50000), follow_redirects=False)
        form = {"username": "elsewhere", "password": "elsewhere-password-123", "next": "/"}
        form["csrf"] = CSRF.search(client.get("/login").text).group(1)  # type: ignore[union-attr]
        answer = client.post("/login", data=form, headers=HTTPS)
        assert answer.status_code == 303
        assert ("; secure" in answer.headers["set-cookie"].lower()) is (trusted == PROXY)


def test_trusted_proxies_must_be_addresses_or_networks() -> None:
    from medvidbench.core.config import Settings

    assert Settings(trusted_proxies=" 10.0.0.1, 172.30.0.0/24 ,::1").trusted_proxies == (
        "10.0.0.1,172.30.0.0/24,::1"
    )
    with pytest.raises(ValueError, match=r"got 'proxy\.example'"):
        Settings(trusted_proxies="127.0.0.1,proxy.example")


@pytest.mark.parametrize(
    ("setting", "forwarded", "visitor"),
    [
        # one proxy appends the address it saw; what is left of it is the visitor's to write
        ("*", "10.0.0.5, 203.0.113.9", "203.0.113.9"),
        ("*", "203.0.113.9", "203.0.113.9"),
        (PROXY, "10.0.0.5, 203.0.113.9", "203.0.113.9"),
        # a chain named in full: the nearest untrusted hop
        ("127.0.0.0/8,10.0.0.0/8", "198.51.100.1, 203.0.113.9, 10.0.0.7", "203.0.113.9"),
        # a forged entry that is not an address: the peer's own address stands
        (PROXY, "not-an-address", PROXY),
        ("*", "10.0.0.5, [2001:db8::1]:443", "2001:db8::1"),
    ],
)
def test_the_visitor_is_the_nearest_untrusted_hop(
    setting: str, forwarded: str, visitor: str
) -> None:
    """#32: under '*' the leftmost entry (which the visitor writes) was taken as the address."""
    bare = FastAPI()

    @bare.get("/who")
    def who(request: Request) -> dict[str, str]:
        return {"client": request.client.host if request.client else ""}

    app = ForwardedHeaders(bare, setting)
    client = TestClient(app, client=(PROXY, 50000))  # type: ignore[arg-type]
    seen = client.get("/who", headers={"X-Forwarded-For": forwarded}).json()["client"]
    assert seen == visitor


def test_star_does_not_let_a_visitor_forge_an_address(tmp_path: Path) -> None:
    """With MEDVIDBENCH_TRUSTED_PROXIES='*' behind a proxy that appends, a visitor who writes
    X-Forwarded-For themselves is still one address: the sign-up limit holds, and /metrics
    restricted to an address is not opened by naming that address."""
    data = tmp_path / "data"
    env = {
        "MEDVIDBENCH_TRUSTED_PROXIES": "*",
        "MEDVIDBENCH_METRICS_ALLOW": "10.0.0.5",
        "MEDVIDBENCH_METRICS_TOKEN": "m" * 32,
    }
    with live_server(data, env=env) as live:
        # as an appending proxy would send it: the forged entry, then the real visitor
        forged = [f"10.9.{n}.{n}, 198.51.100.77" for n in range(5)]
        assert _sign_ups(live.url, forged) == [303] * 3 + [429] * 2
        with via_proxy(live.url) as client:
            scraped = client.get("/metrics", headers={"X-Forwarded-For": "10.0.0.5, 198.51.100.77"})
            assert scraped.status_code in (401, 403), scraped.text
            allowed = client.get("/metrics", headers={"X-Forwarded-For": "198.51.100.77, 10.0.0.5"})
            assert allowed.status_code == 200, allowed.text
