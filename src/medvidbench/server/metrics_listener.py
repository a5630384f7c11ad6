"""A worker's own ``/metrics`` listener, for a worker on a machine with no web process.

A web process's ``/metrics`` adds up the processes that share its machine's
``PROMETHEUS_MULTIPROC_DIR``; a worker on another machine writes to its own machine's folder,
so Prometheus scrapes it here instead (``medvidbench worker --metrics-port N``). It serves the
job and judge instruments of that machine's processes only: the submission and queue gauges,
read from the database and the queue, are the web's to report (served twice, a sum over
targets would count them twice). The same settings as the web's ``/metrics`` decide who may
scrape: a bearer token or an allowed address, and a listener with neither refuses to start.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from medvidbench.core.errors import UsageError
from medvidbench.server.metrics import instruments_exposition, scrape_allowed
from medvidbench.server.runtime import Runtime


class MetricsListener:
    """An HTTP server on its own thread answering ``GET /metrics``; :meth:`close` stops it."""

    def __init__(self, runtime: Runtime, host: str, port: int) -> None:
        if scrape_allowed(runtime, None, None) is None:
            raise UsageError(
                "--metrics-port needs MEDVIDBENCH_METRICS_TOKEN or MEDVIDBENCH_METRICS_ALLOW: "
                "the worker's metrics are not public"
            )
        handler = type("Handler", (_Handler,), {"runtime": runtime})
        try:
            self.server = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            raise UsageError(
                f"cannot listen for metrics on {host}:{port}: {exc.strerror}"
            ) from None
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="metrics-listener", daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    runtime: Runtime

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/metrics":
            self._answer(404, b"not found: the worker serves /metrics only\n")
            return
        allowed = scrape_allowed(
            self.runtime, self.client_address[0], self.headers.get("Authorization")
        )
        if not allowed:
            self._answer(
                401,
                b"metrics need a bearer token or an allowed address\n",
                {"WWW-Authenticate": 'Bearer realm="metrics"'},
            )
            return
        from prometheus_client import CONTENT_TYPE_LATEST

        self._answer(200, instruments_exposition(), content_type=CONTENT_TYPE_LATEST)

    def _answer(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        content_type: str = "text/plain; charset=utf-8",
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Scrapes every few seconds are not worth a log line each."""
