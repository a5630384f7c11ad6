"""Attacks on a real ``medvidbench serve`` over HTTP: each one failed before it was fixed.

CSRF through the API, bodies read before authentication, sessions that outlive logout, token
secrets in cookies, cookies without ``Secure`` behind HTTPS, and world-readable data files.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.web.live import Live, create_user, live_server

PASSWORD = "attack-user-password"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    data = tmp_path_factory.mktemp("attacks")
    create_user(data, "victim", PASSWORD)
    with live_server(data) as live:
        yield live


def logged_in(live: Live, name: str = "victim") -> httpx.Client:
    client = httpx.Client(base_url=live.url, timeout=30)
    token = CSRF.search(client.get("/login").text)
    assert token
    answer = client.post(
        "/login", data={"username": name, "password": PASSWORD, "csrf": token.group(1)}
    )
    assert answer.status_code == 303, answer.text
    return client


def csrf_of(client: httpx.Client, path: str) -> str:
    match = CSRF.search(client.get(path).text)
    assert match, path
    return match.group(1)


def stored_submissions(live: Live) -> int:
    mine = httpx.get(f"{live.url}/api/v1/boards/community").json()
    return len(mine)


def test_a_page_on_another_port_cannot_submit_with_the_victims_cookie(server: Live) -> None:
    victim = logged_in(server)
    before = stored_submissions(server)
    evil = f"http://127.0.0.1:{server.port + 1}"
    demo = server.data / "demo" / "medvidbench" / "predictions_strong.json"
    answer = victim.post(
        "/api/v1/submissions",
        headers={"Origin": evil},
        files={"file": ("p.json", demo.read_bytes(), "application/json")},
        data={"model_name": "Forged"},
    )
    assert answer.status_code == 401 and "API token" in answer.json()["message"]
    # The form needs the page's CSRF token; even with it, a foreign Origin is refused.
    token = csrf_of(victim, "/b/medvidbench/submit")
    forged_form = victim.post(
        "/b/medvidbench/submit",
        headers={"Origin": evil},
        files={"file": ("p.json", demo.read_bytes(), "application/json")},
        data={"model_name": "Forged form", "csrf": token},
    )
    assert forged_form.status_code == 403
    assert stored_submissions(server) == before


def raw_post(live: Live, path: str, declared: int, sent: int, headers: str = "") -> str:
    """Declare a large body, send only part of it, and read what the server answers."""
    with socket.create_connection(("127.0.0.1", live.port), timeout=10) as sock:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{live.port}\r\n{headers}"
            "Content-Type: multipart/form-data; boundary=b\r\n"
            f"Content-Length: {declared}\r\n\r\n"
        )
        sock.sendall(head.encode())
        sock.sendall(b"x" * sent)
        return sock.recv(65536).decode("latin-1")


def test_an_anonymous_upload_is_refused_before_its_body_is_read(server: Live) -> None:
    # 100 MB declared (under the 1 GiB limit), 16 KB sent: the answer comes at once. (Little
    # enough that the server has read all of it when it answers and closes: unread bytes at a
    # close would make the kernel reset the connection and could swallow the answer.)
    answer = raw_post(server, "/api/v1/submissions", 100 << 20, 16 << 10)
    assert answer.startswith("HTTP/1.1 401"), answer[:200]
    page = raw_post(server, "/b/medvidbench/submit", 100 << 20, 16 << 10)
    assert page.startswith("HTTP/1.1 303") and "/login?next=/b/medvidbench/submit" in page
    bogus = raw_post(
        server, "/api/v1/submissions", 100 << 20, 16 << 10, "Authorization: Bearer mvb_nope\r\n"
    )
    assert bogus.startswith("HTTP/1.1 401")


@pytest.mark.parametrize(
    ("path", "streamed_status"),
    [("/login", 413), ("/signup", 413), ("/logout", 413), ("/account/tokens", 303)],
)
def test_small_forms_take_small_bodies(server: Live, path: str, streamed_status: int) -> None:
    """Over 64 KB is refused; a visitor's token request goes to log in without being read."""
    declared = raw_post(server, path, 1 << 20, 0)
    assert declared.startswith("HTTP/1.1 413"), declared[:200]

    def chunks() -> Iterator[bytes]:
        # 66 KB in all, just over the limit: the server has read every byte when it answers,
        # so its close is orderly (unread bytes would make the kernel reset the connection).
        for _ in range(2):
            yield b"username=" + b"a" * (33 << 10)

    streamed = httpx.post(
        f"{server.url}{path}",
        content=chunks(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        timeout=30,
    )
    assert streamed.status_code == streamed_status, streamed.text[:300]


def test_a_streamed_oversized_form_upload_is_a_413_not_a_500(tmp_path: Path) -> None:
    data = tmp_path / "small-limit"
    create_user(data, "victim", PASSWORD)
    with live_server(data, env={"MEDVIDBENCH_MAX_SUBMISSION_BYTES": "6000000"}) as live:
        client = logged_in(live)
        token = csrf_of(client, "/b/medvidbench/submit")
        boundary = "XyZ"

        def body() -> Iterator[bytes]:
            yield (
                f'--{boundary}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{token}\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="model_name"\r\n\r\nBig\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.json"\r\n'
                "Content-Type: application/json\r\n\r\n["
            ).encode()
            for _ in range(8):
                yield b" " * (1 << 20)
            yield f"]\r\n--{boundary}--\r\n".encode()

        answer = client.post(
            "/b/medvidbench/submit",
            content=body(),
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
        assert answer.status_code == 413, answer.text[:300]
        assert "larger than the limit of 6,000,000 bytes" in answer.text
        assert client.get("/api/v1/health").status_code == 200


def test_logging_out_ends_the_session_on_the_server(server: Live) -> None:
    client = logged_in(server)
    copied = dict(client.cookies)
    assert client.get("/account").status_code == 200
    assert client.post("/logout", data={"csrf": csrf_of(client, "/account")}).status_code == 303
    thief = httpx.Client(base_url=server.url, cookies=copied)
    assert thief.get("/account").status_code == 303  # sent to the login page


def cookie_payload(client: httpx.Client) -> str:
    value = client.cookies["mvb_session"]
    payload = value.split(".")[0]
    return base64.b64decode(payload + "=" * (-len(payload) % 4)).decode()


def test_a_new_tokens_secret_is_never_in_the_cookie(server: Live) -> None:
    client = logged_in(server)
    made = client.post("/account/tokens", data={"name": "t", "csrf": csrf_of(client, "/account")})
    assert made.status_code == 303  # only a seed, useless without the server's key, waits
    assert "mvb_" not in cookie_payload(client)
    answer = client.get("/account")
    secret = re.search(r'id="new-token">(mvb_[^<]+)<', answer.text)
    assert answer.status_code == 200 and secret and answer.headers["cache-control"] == "no-store"
    assert "mvb_" not in cookie_payload(client) and secret.group(1) not in str(client.cookies)
    assert "uid" not in json.loads(cookie_payload(client))  # only a random session secret
    assert secret.group(1) not in client.get("/account").text  # shown once


def test_the_cookie_is_secure_when_the_request_came_over_https(server: Live) -> None:
    plain = httpx.get(f"{server.url}/login")
    assert "secure" not in plain.headers["set-cookie"].lower()
    proxied = httpx.get(f"{server.url}/login", headers={"X-Forwarded-Proto": "https"})
    assert "; Secure" in proxied.headers["set-cookie"]
    assert "httponly" in proxied.headers["set-cookie"].lower()


def test_the_data_folder_is_the_owners_alone(server: Live) -> None:
    # Something stored first: a submission through the API with a token.
    client = logged_in(server)
    client.post("/account/tokens", data={"name": "p", "csrf": csrf_of(client, "/account")})
    answer = client.get("/account")
    secret = re.search(r'id="new-token">(mvb_[^<]+)<', answer.text)
    assert secret
    demo = server.data / "demo" / "medvidbench" / "predictions_weak.json"
    sent = httpx.post(
        f"{server.url}/api/v1/submissions",
        headers={"Authorization": f"Bearer {secret.group(1)}"},
        files={"file": ("p.json", demo.read_bytes(), "application/json")},
        data={"model_name": "Permissions"},
        timeout=60,
    )
    assert sent.status_code == 202, sent.text
    found = {"dirs": 0, "files": 0}
    for path in [server.data, *server.data.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_dir():
            found["dirs"] += 1
            assert mode == 0o700, (path, oct(mode))
        else:
            found["files"] += 1
            assert mode & 0o077 == 0, (path, oct(mode))
    names = {p.name for p in server.data.rglob("*")}
    assert {"medvidbench.sqlite3", "queue.sqlite3", "secret_key"} <= names
    assert any(p.suffix == ".gz" for p in (server.data / "submissions").iterdir())
    assert any(p.suffix == ".gz" for p in (server.data / "benchmarks").iterdir())


def test_the_favicon_is_served(server: Live) -> None:
    icon = httpx.get(f"{server.url}/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
