"""A small client for a leaderboard server's REST API (the ``medvidbench submit`` command)."""

from __future__ import annotations

import time
from dataclasses import fields
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from medvidbench.cli import consoles
from medvidbench.cli.consoles import Console, escape
from medvidbench.cli.tables import Table
from medvidbench.core import display
from medvidbench.core.benchmark import Metric
from medvidbench.core.errors import ExitCode, MedVidBenchError, UsageError
from medvidbench.server import lifecycle
from medvidbench.server.lifecycle import Status

# --wait returns once the rule-based scores are in, or nothing more will happen.
FINAL = (Status.SCORED, *lifecycle.FINAL)


# Answers that say "not now": a quota or rate limit, a busy server, and a proxy in front of it
# that could not reach it (502) or waited too long (504).
RETRY_STATUSES = (429, 502, 503, 504)


class ServerError(MedVidBenchError):
    """The server refused or failed a request; the exit code says whether to try again:
    7 for 429, 502, 503 and 504 (quota, rate limit, busy, the server behind a proxy not
    answering), 6 for any other refusal, 1 for a failure."""

    exit_code = ExitCode.REFUSED

    def __init__(self, message: str, status: int = 0, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.body = status, body or {"message": message}
        if status in RETRY_STATUSES:
            self.exit_code = ExitCode.RETRY_LATER
        elif status >= 500:
            self.exit_code = ExitCode.FAILURE


class Unreachable(MedVidBenchError):
    """The server did not answer (refused, timed out, the connection dropped): try again."""

    exit_code = ExitCode.RETRY_LATER


def _unreachable(base: str, exc: httpx.HTTPError) -> MedVidBenchError:
    """The error for a request that got no answer: a URL that cannot work is the caller's
    mistake (exit 2); a server that does not answer now may later (exit 7)."""
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return UsageError(f"{base!r} is not a server URL: {exc}")
    return Unreachable(f"cannot reach {base}: {exc or exc.__class__.__name__}; try again later")


def _raise(response: httpx.Response) -> None:
    try:
        body = response.json()
    except ValueError:
        body = {"message": response.text[:500]}
    if not isinstance(body, dict):
        body = {"message": str(body)[:500]}
    problems = body.get("problems") or []
    lines = [f"  - {p.get('message', p)}" for p in problems[:20]]
    more = f"\n  ... {len(problems) - 20} more" if len(problems) > 20 else ""
    retry = response.headers.get("Retry-After")
    when = f" (retry after {retry} s)" if retry and retry.isdigit() else ""
    raise ServerError(
        f"the server answered {response.status_code}: {body.get('message', 'error')}{when}"
        + ("\n" + "\n".join(lines) if lines else "")
        + more,
        response.status_code,
        body,
    )


def submit_file(
    path: Path,
    server: str,
    token: str,
    model_name: str,
    organisation: str = "",
    model_url: str = "",
    wait: bool = False,
    timeout: float = 600.0,
    benchmark: str | None = None,
    visibility: str = "public",
    as_json: bool = False,
) -> dict[str, Any]:
    """Upload a prediction file to ``benchmark`` (a slug; None: the server's default);
    with ``wait``, poll until final and print the scores (``as_json``: the server's JSON
    result on standard output instead of the table; the messages stay on standard error)."""
    if not path.is_file():
        raise UsageError(f"{str(path)!r} is not a file")
    token = token.strip()
    if not token or not token.isprintable() or not token.isascii():
        raise UsageError(
            "--token (or MEDVIDBENCH_TOKEN) is empty or not a token: give the mvb_... value "
            "your account page showed"
        )
    base = server.rstrip("/")
    target = (
        f"{base}/api/v1/benchmarks/{quote(benchmark, safe='')}/submissions"
        if benchmark
        else f"{base}/api/v1/submissions"
    )
    headers = {"Authorization": f"Bearer {token}"}
    console = consoles.console(stderr=True, soft_wrap=True)  # lines whole, URLs unbroken
    with httpx.Client(timeout=120) as http, path.open("rb") as fh:
        try:
            response = http.post(
                target,
                headers=headers,
                files={"file": (path.name, fh, "application/json")},
                data={
                    "model_name": model_name,
                    "organisation": organisation,
                    "model_url": model_url,
                    "visibility": visibility,
                },
            )
        except httpx.HTTPError as exc:
            raise _unreachable(base, exc) from None
        if response.status_code != 202:
            _raise(response)
        created = response.json()
        private = created.get("visibility") == "private"
        console.print(
            f"accepted as submission {created['id']}"
            + (" (private: seen by you and the maintainers only, on no board)" if private else "")
            + f": {base}{created['url']}",
            highlight=False,
        )
        _print_warnings(console, created.get("warnings") or [])
        if created.get("note"):  # e.g. the server's job queue is down: scoring starts later
            console.print(f"note: {created['note']}", highlight=False)
        left = response.headers.get("X-RateLimit-Remaining")
        if left is not None:  # the server has quotas: say what is left of the tightest
            console.print(
                f"quota: {left} of {response.headers.get('X-RateLimit-Limit')} submissions left "
                f"for the {response.headers.get('X-RateLimit-Window', 'period')}",
                highlight=False,
            )
        if not wait:
            return dict(created)
        deadline = time.monotonic() + timeout
        with console.status("waiting for the scores") as status:
            while True:
                try:
                    detail = http.get(f"{base}/api/v1/submissions/{created['id']}", headers=headers)
                except httpx.HTTPError as exc:
                    raise _unreachable(base, exc) from None
                if detail.status_code != 200:
                    _raise(detail)
                body = detail.json()
                status.update(f"status: {body['status']}")
                if body["status"] in FINAL or body.get("final"):
                    break
                if time.monotonic() > deadline:
                    raise UsageError(f"still {body['status']} after {timeout:.0f} s")
                time.sleep(0.5)
    if not as_json:
        _print(body, _metric_table(base, body.get("benchmark")))
    if body["status"] in (Status.REJECTED, Status.FAILED):
        # rejected: the file will never be accepted; failed: the server's fault
        raise ServerError(
            f"submission {body['status']}: {body.get('error') or ''}",
            422 if body["status"] == Status.REJECTED else 500,
            body,
        )
    return dict(body)


def _print_warnings(console: Console, warnings: list[str]) -> None:
    """Every validation warning in full (the file was accepted all the same)."""
    if not warnings:
        return
    console.print(f"{len(warnings)} validation warning{'s' if len(warnings) != 1 else ''}:")
    for text in warnings:
        console.print(f"  - {escape(text)}", highlight=False, soft_wrap=True)


def _metric_table(base: str, slug: str | None) -> list[Metric]:
    """The benchmark's metric table as the server declares it (names, units, judged flags):
    the words the web pages use. Empty if the server does not say."""
    if not slug:
        return []
    try:
        answer = httpx.get(f"{base}/api/v1/benchmarks/{quote(slug, safe='')}/metrics", timeout=30)
        declared = answer.json()["metrics"] if answer.status_code == 200 else []
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return []
    known = {f.name for f in fields(Metric)}
    return [Metric(**{k: v for k, v in m.items() if k in known}) for m in declared]


def _print(body: dict[str, Any], table_of: list[Metric]) -> None:
    """The scores in the web page's words: display names, units, absent-value words and 95 %
    intervals; for a private run, that it is private and where it would rank."""
    metrics = body.get("metrics") or {}
    by_key = {m.key: m for m in table_of}
    intervals = (body.get("statistics") or {}).get("intervals") or {}
    table = Table(title=f"{escape(body['model_name'])}: {body['status']}", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    if intervals:
        table.add_column("95 % interval", justify="right")
    missing, judge_on = body.get("missing_tasks") or [], bool(body.get("judge_on"))
    for key, value in metrics.items():  # the server's metric order
        m = by_key.get(key) or Metric(key, key, "", "")
        shown = (
            display.value(value, m.percent)
            if value is not None
            else f"[dim]{display.absent(m, missing, judge_on)}[/]"
        )
        row = [escape(m.column), shown]
        if intervals:
            row.append(display.interval(intervals.get(key), m.percent))
        table.add_row(*row)
    out = consoles.console(soft_wrap=True)
    out.print(table)
    if body.get("profile"):
        out.print(f"profile {body['profile']}, scorer {body.get('scorer_version')}")
    if body.get("visibility") == "private":
        rank = body.get("would_rank")
        where = (
            f"; on the community board it would rank {rank[0]} of {rank[1]}"
            if rank
            else "; where it would rank shows once it is scored"
        )
        out.print(
            f"private: seen by you and the maintainers only, on no board{where}", highlight=False
        )
