"""A fake OpenAI-compatible judge: a real HTTP server on 127.0.0.1 for tests and benchmarks.

It answers ``POST /v1/chat/completions`` with five rubric scores. By default the scores grow
with the word overlap of the prediction and the reference in the prompt, so better answers get
better scores; a ``responder`` function can script any answer. It can add latency and inject
429s (with ``retry-after-ms``), 500s, timeouts (sleeping past the client's timeout) and
malformed answers, and it counts what it was asked.

Example:
    with FakeJudgeServer(latency=0.2, rate_429=0.1) as server:
        os.environ["OPENAI_BASE_URL"] = server.url
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[str], str]
_SECTION = re.compile(r"REFERENCE:\n(.*?)\n\nPREDICTION:\n(.*?)\n\n", re.DOTALL)
_WORD = re.compile(r"[a-z]+")
_FORMAT_LINE = re.compile(r"^(\w+): <score>$", re.MULTILINE)  # a rubric's answer format


def overlap_responder(prompt: str) -> str:
    """Scores from 1 to 5 by the word overlap (Jaccard) of prediction and reference, one line
    per aspect the prompt's answer format asks for."""
    m = _SECTION.search(prompt)
    ref, pred = (m.group(1), m.group(2)) if m else ("", "")
    a, b = set(_WORD.findall(ref.lower())), set(_WORD.findall(pred.lower()))
    jaccard = len(a & b) / len(a | b) if a | b else 0.0
    base = 1 + round(4 * jaccard)
    return "\n".join(
        f"{code}: {max(1, min(5, base - (i % 2 if base > 1 else 0)))}"
        for i, code in enumerate(_FORMAT_LINE.findall(prompt))
    )


def pair_of(prompt: str) -> tuple[str, str]:
    """The (prediction, reference) a rubric prompt asks about."""
    m = _SECTION.search(prompt)
    return (m.group(2), m.group(1)) if m else ("", "")


def steady_responder(prompt: str) -> str:
    """A scripted reference judge for the agreement card's checks: the same answer every time,
    each aspect 2-4 by word overlap (2-3 for an answer with more words than its reference),
    so that a second judge's scripted noise and bias never leave the 1-5 scale."""
    pred, ref = pair_of(prompt)
    a, b = set(_WORD.findall(ref.lower())), set(_WORD.findall(pred.lower()))
    jaccard = len(a & b) / len(a | b) if a | b else 0.0
    long = len(pred.split()) > len(ref.split())
    top = 1 if long else 2
    return "\n".join(
        f"{code}: {2 + min(top, max(0, round(top * jaccard) - (i % 2 if jaccard < 0.9 else 0)))}"
        for i, code in enumerate(_FORMAT_LINE.findall(prompt))
    )


def noisy_responder(flip: float, long_bonus: bool, seed: int = 0) -> Responder:
    """A second judge scripted from :func:`steady_responder` (a new draw on every call, so a
    pair asked twice can get two answers). Each aspect moves one point down or up with
    probability ``flip / 2`` each. With ``long_bonus``, an answer with more words than its
    reference gains one point on two or three of its aspects (even odds): +0.5 on its
    five-aspect mean on average, each aspect +1 with probability 1/2."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def respond(prompt: str) -> str:
        pred, ref = pair_of(prompt)
        lines = steady_responder(prompt).splitlines()
        with lock:
            rolls = [rng.random() for _ in lines]
            raised = set(rng.sample(range(len(lines)), rng.choice((2, 3))))
        if not (long_bonus and len(pred.split()) > len(ref.split())):
            raised = set()
        out = []
        for i, (line, roll) in enumerate(zip(lines, rolls, strict=True)):
            code, value = line.split(": ")
            score = int(value) + (-1 if roll < flip / 2 else 1 if roll < flip else 0)
            out.append(f"{code}: {score + (i in raised)}")
        return "\n".join(out)

    return respond


def noisy_table(reference: list[int], long: list[bool], flip: float, long_bonus: bool) -> Any:
    """The contingency table (reference judge's score x the noisy judge's, 5 x 5) that
    :func:`noisy_responder` gives in expectation for one aspect, given the reference judge's
    scores of the pairs and which answers are long: the kappa it was scripted to have."""
    import numpy as np

    table = np.zeros((5, 5))
    steps = ((-1, flip / 2), (0, 1 - flip), (1, flip / 2))
    for a, is_long in zip(reference, long, strict=True):
        bonus = ((0, 0.5), (1, 0.5)) if long_bonus and is_long else ((0, 1.0),)
        for step, p in steps:
            for extra, q in bonus:
                table[a - 1, a + step + extra - 1] += p * q
    return table


class _Server(ThreadingHTTPServer):
    # The default listen backlog of 5 drops connections when a client opens dozens at once,
    # and each dropped SYN costs a one-second retransmission.
    request_queue_size = 256


class FakeJudgeServer:
    """A threaded HTTP server imitating the chat-completions endpoint."""

    def __init__(
        self,
        responder: Responder = overlap_responder,
        latency: float = 0.0,
        rate_429: float = 0.0,
        rate_500: float = 0.0,
        rate_timeout: float = 0.0,
        rate_malformed: float = 0.0,
        timeout_sleep: float = 5.0,
        seed: int = 0,
        model: str = "fake-judge-1",
        api_key: str | None = None,
        outage_requests: int = 0,
    ) -> None:
        self.responder, self.latency, self.model = responder, latency, model
        self.api_key = api_key
        self.outage_requests = outage_requests  # the first N requests all get a 500
        self.rates = {
            "429": rate_429,
            "500": rate_500,
            "timeout": rate_timeout,
            "malformed": rate_malformed,
        }
        self.timeout_sleep = timeout_sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.requests = 0
        self.answered = 0
        self.injected: dict[str, int] = dict.fromkeys(self.rates, 0)
        self.prompts: list[str] = []
        self.first_request_at: float | None = None  # Unix time of the first completion asked
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeJudgeServer:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _draw(self) -> str | None:
        with self._lock:
            self.requests += 1
            if self.first_request_at is None:
                self.first_request_at = time.time()
            roll = self._rng.random()
        for name, rate in self.rates.items():
            if roll < rate:
                with self._lock:
                    self.injected[name] += 1
                return name
            roll -= rate
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle's algorithm on, the second waits
            # for the client's delayed ACK (~40 ms). Real servers (uvicorn, vLLM) disable it too.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                """``/stats``: what the server was asked, for benchmarks in another process."""
                if self.path.rstrip("/").endswith("/stats"):
                    with fake._lock:
                        body = {
                            "requests": fake.requests,
                            "answered": fake.answered,
                            "injected": fake.injected,
                            "first_request_at": fake.first_request_at,
                        }
                    self._send(200, body, {})
                else:
                    self._send(404, {"error": {"message": "not found"}}, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}}, {})
                    return
                if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    self._send(401, {"error": {"message": "invalid api key"}}, {})
                    return
                fault = fake._draw()
                if fake.requests <= fake.outage_requests:
                    fault = "500"
                time.sleep(fake.latency)
                if fault == "429":
                    self._send(
                        429,
                        {"error": {"message": "rate limited", "type": "rate_limit"}},
                        {"retry-after-ms": "200", "retry-after": "1"},
                    )
                    return
                if fault == "500":
                    self._send(500, {"error": {"message": "internal error"}}, {})
                    return
                if fault == "timeout":
                    time.sleep(fake.timeout_sleep)
                prompt = request["messages"][-1]["content"]
                text = (
                    "I think it is quite good." if fault == "malformed" else fake.responder(prompt)
                )
                with fake._lock:
                    fake.answered += 1
                    fake.prompts.append(prompt)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{fake.answered}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": fake.model,
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": text},
                            }
                        ],
                        "usage": {
                            "prompt_tokens": len(prompt) // 4,
                            "completion_tokens": 20,
                            "total_tokens": len(prompt) // 4 + 20,
                        },
                    },
                    {},
                )

        return Handler


def main(argv: list[str] | None = None) -> None:
    """Run the fake judge in its own process (benchmarks: then it shares no interpreter lock
    with the client being measured). Prints its URL, serves until stopped."""
    import argparse

    parser = argparse.ArgumentParser(description="A fake OpenAI-compatible judge on 127.0.0.1.")
    parser.add_argument("--latency", type=float, default=0.2, help="Seconds per answer.")
    parser.add_argument("--rate-429", type=float, default=0.0, help="Share of 429 answers.")
    parser.add_argument("--rate-500", type=float, default=0.0, help="Share of 500 answers.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    server = FakeJudgeServer(
        latency=args.latency, rate_429=args.rate_429, rate_500=args.rate_500, seed=args.seed
    )
    print(server.url, flush=True)
    try:
        server._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._server.server_close()


if __name__ == "__main__":
    main()
