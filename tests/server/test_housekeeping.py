"""Housekeeping: expired sessions deleted, crash leftovers under incoming/ swept, by the reaper."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from medvidbench.server.runtime import Runtime
from medvidbench.server.services.accounts import open_web_session
from medvidbench.server.services.housekeeping import (
    SCRATCH_MAX_AGE_SECONDS,
    delete_expired_sessions,
    sweep_scratch,
)
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import WebSession
from tests.server.conftest import make_user

DAY = 24 * 3600


def _sessions(runtime: Runtime) -> int:
    with runtime.sessions() as session:
        return len(session.scalars(select(WebSession.id)).all())


def _expire_all_but_one(runtime: Runtime) -> None:
    """Two sessions of three expired a minute ago (as 14 days after their sign-in would)."""
    user = make_user(runtime)
    for _ in range(3):
        open_web_session(runtime, user)
    with transaction(runtime.sessions) as session:
        ids = sorted(session.scalars(select(WebSession.id)))[:2]
        past = datetime.now(UTC) - timedelta(minutes=1)
        session.execute(update(WebSession).where(WebSession.id.in_(ids)).values(expires_at=past))


def _scratch(runtime: Runtime, name: str, age_seconds: float) -> Path:
    path = runtime.data_dir / "incoming" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"{}")
    stamp = time.time() - age_seconds
    os.utime(path, (stamp, stamp))
    return path


def test_expired_sessions_are_deleted_and_live_ones_kept(runtime: Runtime) -> None:
    _expire_all_but_one(runtime)
    assert _sessions(runtime) == 3
    assert delete_expired_sessions(runtime) == 2
    assert _sessions(runtime) == 1
    assert delete_expired_sessions(runtime) == 0  # the live one stays


def test_only_scratch_files_untouched_for_a_day_are_swept(runtime: Runtime) -> None:
    left = _scratch(runtime, "a.upload", SCRATCH_MAX_AGE_SECONDS + 60)
    staged = _scratch(runtime, "b.json.gz", 3 * DAY)
    recent = _scratch(runtime, "c.upload", SCRATCH_MAX_AGE_SECONDS - 600)
    # An upload still arriving: created long ago, but written to just now.
    slow = _scratch(runtime, "d.upload", 2 * DAY)
    with slow.open("ab") as out:
        out.write(b" ")
    assert sweep_scratch(runtime) == 2
    assert not left.exists() and not staged.exists()
    assert recent.exists() and slow.exists()


def test_the_reaper_tidies_every_minute(runtime: Runtime) -> None:
    _expire_all_but_one(runtime)
    left = _scratch(runtime, "crashed.upload", 2 * DAY)
    kept = _scratch(runtime, "arriving.upload", 1)
    runtime.queue.reap.call_local()  # type: ignore[attr-defined]  # what a worker runs each minute
    assert _sessions(runtime) == 1
    assert not left.exists() and kept.exists()


def test_a_web_process_sweeps_its_own_incoming_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A web process runs no reaper: what a crash of it left is swept when it starts again."""
    from medvidbench.core.config import Settings
    from medvidbench.server.store.db import upgrade
    from medvidbench.server.web.asgi import app

    data = tmp_path / "data"
    upgrade(Runtime(Settings(data_dir=data)).engine)  # type: ignore[call-arg]
    runtime = Runtime(Settings(data_dir=data))  # type: ignore[call-arg]
    left = _scratch(runtime, "crashed.upload", 2 * DAY)
    kept = _scratch(runtime, "arriving.upload", 1)
    monkeypatch.setenv("MEDVIDBENCH_DATA_DIR", str(data))
    monkeypatch.setenv("MEDVIDBENCH_SECRET_KEY", "s" * 40)
    app()
    assert not left.exists() and kept.exists()
