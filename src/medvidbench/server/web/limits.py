"""Limits on what one request can cost: body sizes enforced on the byte stream (before anything
is parsed or stored), a deadline on reads, slow password work kept off the event loop,
failed-login counts."""

from __future__ import annotations

import asyncio
import html
import ipaddress
import json
import logging
import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, ParamSpec, TypeVar

import anyio

from medvidbench.core.errors import MedVidBenchError

MULTIPART_OVERHEAD = 1 << 20  # form fields and part headers around the file


class PayloadTooLargeError(MedVidBenchError):
    """The request body is larger than the configured limit."""

    http_status = 413
    exit_code = 2


SMALL_BODY = 64 * 1024  # every form but an upload: log in, sign up, tokens, admin actions


class BodyLimit:
    """ASGI middleware: refuse bodies over the limit as they stream in (413).

    Uploads (paths for which ``is_upload`` is true) may be as large as the configured limit;
    every other request body at most :data:`SMALL_BODY`, so an anonymous visitor cannot make
    the server read and spool a large body on ``/login`` or ``/signup``. A declared
    Content-Length over the limit is refused before a byte is read; otherwise the bytes are
    counted as they arrive, and the request fails the moment the count passes the limit, so an
    oversized upload is never parsed or stored. Whatever the app was doing then, the answer is
    a 413, never a 500.
    """

    def __init__(
        self, app: Any, limit: Callable[[], int], is_upload: Callable[[str], bool]
    ) -> None:
        self.app, self.limit, self.is_upload = app, limit, is_upload

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        upload = self.is_upload(scope.get("path", ""))
        limit = self.limit() + MULTIPART_OVERHEAD if upload else SMALL_BODY
        shown = limit - MULTIPART_OVERHEAD if upload else limit
        declared = dict(scope.get("headers", [])).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _refuse(scope, send, shown)
            return
        seen, started, over = 0, False, False

        async def counted() -> Any:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    over = True
                    raise PayloadTooLargeError(_too_large(shown))
            return message

        async def watched(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BaseException as exc:
            if not over or started or not _is_too_large(exc):
                raise
            await _refuse(scope, send, shown)


class Deadline:
    """ASGI middleware: a read (GET, HEAD) that has not begun its answer within ``seconds``
    is answered 503 with ``Retry-After``.

    What it guards against is a database that stops answering on connections already open (a
    network partition, a frozen server): a new connection fails within the connect timeout,
    but a query on an open one waits for as long as the socket lives, and every page with it.
    The request's own work is not interrupted (a thread blocked on the database cannot be):
    it finishes when the database answers, and whatever it would have sent is dropped.
    Writes are left alone: answering 503 while the write may still commit would invite a
    second one.
    """

    def __init__(self, app: Any, seconds: Callable[[], float]) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        started = abandoned = False

        async def guarded(message: dict[str, Any]) -> None:
            nonlocal started
            if abandoned:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        work = asyncio.ensure_future(self.app(scope, receive, guarded))
        seconds = self.seconds()
        await asyncio.wait({work}, timeout=seconds)
        if work.done() or started:
            await work  # the answer (or its error) as the app gives it
            return
        abandoned = True
        _ABANDONED.add(work)
        work.add_done_callback(_finished)
        await _too_slow(scope, send, seconds)


_ABANDONED: set[asyncio.Future[Any]] = set()  # kept until they finish
log = logging.getLogger("medvidbench.server.web")


def _finished(work: asyncio.Future[Any]) -> None:
    _ABANDONED.discard(work)
    if not work.cancelled() and work.exception() is not None:
        log.warning("a request answered 503 after its deadline then failed: %r", work.exception())


async def _too_slow(scope: dict[str, Any], send: Any, seconds: float) -> None:
    message = (
        f"the server could not answer within {seconds:g} s (its database may be unreachable); "
        "try again in a minute"
    )
    if scope.get("path", "").startswith("/api/"):
        body = json.dumps({"error": "DeadlineExceeded", "message": message}).encode()
        kind = b"application/json"
    else:
        body = (
            "<!doctype html><meta charset=utf-8><title>Not available right now</title>"
            f"<h1>Not available right now</h1><p>{html.escape(message)}.</p>"
            '<p><a href="/">Back to the leaderboard</a></p>'
        ).encode()
        kind = b"text/html; charset=utf-8"
    await answer(send, 503, body, kind, [(b"retry-after", b"30")])


def _is_too_large(exc: BaseException) -> bool:
    """Whether ``exc`` is (or wraps, in a group or as a cause) our 413."""
    if isinstance(exc, PayloadTooLargeError):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(_is_too_large(e) for e in exc.exceptions)
    cause = exc.__cause__ or exc.__context__
    return cause is not None and _is_too_large(cause)


def _too_large(limit: int) -> str:
    return f"the upload is larger than the limit of {limit:,} bytes"


async def _refuse(scope: dict[str, Any], send: Any, limit: int) -> None:
    message = _too_large(limit)
    if scope.get("path", "").startswith("/api/"):
        body = json.dumps({"error": "PayloadTooLargeError", "message": message}).encode()
        kind = b"application/json"
    else:
        body = (
            "<!doctype html><meta charset=utf-8><title>Too large</title>"
            f"<h1>That did not work</h1><p>{html.escape(message)}</p>"
            '<p><a href="/">Back to the leaderboard</a></p>'
        ).encode()
        kind = b"text/html; charset=utf-8"
    await answer(send, 413, body, kind)


async def answer(
    send: Any,
    status: int,
    body: bytes = b"",
    content_type: bytes | None = None,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """Answer at the ASGI level, before the app or the request body is touched, and close the
    connection (the client may still be sending a body nobody will read)."""
    head = [(b"content-type", content_type)] if content_type else []
    head += [*headers, (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


def network_of(address: str) -> str:
    """The network a throttle counts a client by: an IPv4 address itself, an IPv6 address's
    /64 (one home connection holds all 2^64 addresses of its /64, so counting single addresses
    would let it try without end). Anything else (a test client's name) is kept as it is.

    Examples:
        >>> network_of("2001:db8:1:2:aaaa::7")
        '2001:db8:1:2::/64'
        >>> network_of("::ffff:192.0.2.1")
        '192.0.2.1'
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class FailureLimiter:
    """Counts failures per key in a sliding window (login attempts per network and name).

    In-process: with several web processes each keeps its own count, which still bounds a
    guesser to (processes x limit) tries per window.
    """

    def __init__(self, limit: int = 10, window: float = 300.0) -> None:
        import threading

        self.limit, self.window = limit, window
        self._failures: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> list[float]:
        kept = [t for t in self._failures.get(key, []) if now - t < self.window]
        self._failures[key] = kept
        return kept

    def blocked(self, key: str) -> float:
        """Seconds until another attempt is allowed (0 when allowed now)."""
        import time

        now = time.monotonic()
        with self._lock:
            recent = self._recent(key, now)
            return max(0.0, self.window - (now - recent[0])) if len(recent) >= self.limit else 0.0

    def fail(self, key: str) -> None:
        import time

        with self._lock:
            self._recent(key, time.monotonic()).append(time.monotonic())

    def reset(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)


class LoginThrottle:
    """Failed log-ins counted twice: per network and name (a guesser at home is stopped after
    a few tries) and per name alone, whatever the address (a guesser spread over many
    addresses is stopped too). A name that does not exist is counted the same way, so the
    throttle does not tell which accounts exist.

    The per-name limit is higher: it can also keep the account's owner out for a while, which
    is the price of bounding a distributed guesser.
    """

    def __init__(self, per_network: int = 10, per_account: int = 20, window: float = 300.0) -> None:
        self.by_network = FailureLimiter(per_network, window)
        self.by_account = FailureLimiter(per_account, window)

    @staticmethod
    def _keys(address: str, username: str) -> tuple[str, str]:
        name = username.casefold()
        return f"{network_of(address)}|{name}", name

    def wait(self, address: str, username: str) -> float:
        """Seconds until this client may try this name again (0: now)."""
        network, account = self._keys(address, username)
        return max(self.by_network.blocked(network), self.by_account.blocked(account))

    def failed(self, address: str, username: str) -> None:
        network, account = self._keys(address, username)
        self.by_network.fail(network)
        self.by_account.fail(account)

    def succeeded(self, address: str, username: str) -> None:
        # the per-name count stays: a success does not give a distributed guesser new tries
        self.by_network.reset(self._keys(address, username)[0])


P = ParamSpec("P")
T = TypeVar("T")


class SlowWork:
    """Work that holds a core for a while (argon2 on log-in and sign-up), run in worker
    threads, a few at a time.

    On the event loop one hash stalls every other request (four anonymous login connections
    kept health waiting for seconds). In threads of its own the loop keeps answering (argon2
    releases the interpreter lock), and the limiter makes a flood of logins queue here instead
    of taking every thread of the pool that the plain (sync) routes share.
    """

    def __init__(self, at_once: int | None = None) -> None:
        self.limiter = anyio.CapacityLimiter(at_once or min(4, os.cpu_count() or 1))

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs), limiter=self.limiter)
