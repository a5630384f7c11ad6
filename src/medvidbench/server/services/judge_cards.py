"""A hosted test set's judge agreement card: stored by an administrator's command, shown on
the benchmark's About page beside its judged metrics.

The card is made offline (``medvidbench judge agreement ... --out CARD.json``) and checked
before it is stored (:func:`medvidbench.core.judge.card_check.check`: the benchmark and test
set it was computed on, nothing in it but numbers and names), so a page never shows a caption.
"""

from __future__ import annotations

import json
from typing import Any

from medvidbench.core.errors import UsageError
from medvidbench.core.judge.card_check import check
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.audit import audit
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.store.db import transaction

MAX_BYTES = 1 << 20  # a card of 3 tasks, 5 aspects and 4 judges is about 40 KB


def store(runtime: Runtime, data: bytes, slug: str | None = None) -> dict[str, Any]:
    """Check a card and make it the current test set's (replacing the one before).

    Raises:
        UsageError: a card that is too large, not JSON, or fails the card's check.
    """
    if len(data) > MAX_BYTES:
        raise UsageError(f"a judge agreement card of {len(data):,} bytes (at most {MAX_BYTES:,})")
    try:
        card = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"the card is not JSON ({exc})") from None
    bench = current_benchmark(runtime, slug)
    checked = check(card, runtime.definition(bench.slug), bench.gt_sha256)
    runtime.files.write("judge-card", bench.gt_sha256, json.dumps(checked).encode())
    with transaction(runtime.sessions) as session:
        audit(session, None, "judge card stored", bench.slug, test_set=bench.id)
    return checked


def remove(runtime: Runtime, slug: str | None = None) -> bool:
    """Remove the current test set's card; whether there was one."""
    bench = current_benchmark(runtime, slug)
    had = runtime.files.exists("judge-card", bench.gt_sha256)
    runtime.files.delete("judge-card", bench.gt_sha256)
    if had:
        with transaction(runtime.sessions) as session:
            audit(session, None, "judge card removed", bench.slug, test_set=bench.id)
    return had


def card_of(runtime: Runtime, sha256: str) -> dict[str, Any] | None:
    """The stored card of a test set (None: none stored)."""
    data = runtime.files.read("judge-card", sha256)
    return None if data is None else json.loads(data)
