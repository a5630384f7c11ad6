"""Request-size limits enforced on the byte stream, before anything is parsed or stored."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from medvidbench.errors import MedVidBenchError

MULTIPART_OVERHEAD = 1 << 20  # form fields and part headers around the file


class PayloadTooLargeError(MedVidBenchError):
    """The request body is larger than the configured limit."""

    http_status = 413
    exit_code = 2


class BodyLimit:
    """ASGI middleware: refuse bodies over the limit as they stream in (413).

    A declared Content-Length over the limit is refused before a byte is read; otherwise the
    bytes are counted as they arrive, and the request fails the moment the count passes the
    limit, so an oversized upload is never parsed, spooled or stored.
    """

    def __init__(self, app: Any, limit: Callable[[], int]) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        limit = self.limit() + MULTIPART_OVERHEAD
        declared = dict(scope.get("headers", [])).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _refuse(scope, send, limit)
            return
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise PayloadTooLargeError(
                        f"the upload is larger than the limit of "
                        f"{limit - MULTIPART_OVERHEAD:,} bytes"
                    )
            return message

        await self.app(scope, counted, send)


async def _refuse(scope: dict[str, Any], send: Any, limit: int) -> None:
    message = f"the upload is larger than the limit of {limit - MULTIPART_OVERHEAD:,} bytes"
    body = json.dumps({"error": "PayloadTooLargeError", "message": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class FailureLimiter:
    """Counts failures per key in a sliding window (login attempts per address and name).

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
