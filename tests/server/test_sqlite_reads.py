"""On SQLite, a read never waits for a writer; writers still queue behind one another."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.submissions import submit
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import User
from tests.server.conftest import build_runtime, make_user


def test_a_page_reads_while_another_connection_holds_a_write(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    runtime = build_runtime(tmp_path, None, synthetic["ground_truth"])
    try:
        alice = make_user(runtime)
        submit(runtime, alice, synthetic["weak"].read_bytes(), "Weak")  # scored at once
        holding, release = threading.Event(), threading.Event()

        def writer() -> None:  # another process's long write: an upload being stored
            db = sqlite3.connect(runtime.settings.data_dir / "medvidbench.sqlite3", timeout=30)
            db.isolation_level = None
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE users SET team_id = team_id")
            holding.set()
            release.wait(10)
            db.execute("COMMIT")
            db.close()

        thread = threading.Thread(target=writer)
        thread.start()
        assert holding.wait(10)
        try:
            began = time.monotonic()
            rows = board_rows(runtime, "community")  # the generation and the rows: reads
            current_benchmark(runtime)
            read = time.monotonic() - began
            threading.Timer(2.0, release.set).start()
            began = time.monotonic()
            with transaction(runtime.sessions) as session:  # a write waits for the writer
                session.get(User, alice.id).signup_address = "127.0.0.2"  # type: ignore[union-attr]
            waited = time.monotonic() - began
        finally:
            release.set()
            thread.join()
        assert [r.model_name for r in rows] == ["Weak"]
        # a read that queued behind the writer would wait until it let go (after this read:
        # the 30 s busy timeout); 5 s leaves a loaded machine room and tells the two apart
        assert read < 5.0, f"a read waited {read:.2f} s for the writer"
        assert waited > 1.0, "a write did not queue behind the other writer"
    finally:
        runtime.engine.dispose()
