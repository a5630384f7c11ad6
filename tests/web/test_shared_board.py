"""A board as every visitor sees it is rendered once per change and served with an ETag; a
signed-in visitor's board is their own and never shared."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from medvidbench.server.runtime import Runtime
from tests.web.conftest import login, token_for
from tests.web.test_api import upload

BOARD = "/b/medvidbench/board/community"


def test_a_visitors_board_is_shared_until_the_board_changes(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    owner = TestClient(client.app, follow_redirects=False)
    login(owner, web_runtime)
    token = token_for(owner)
    assert upload(owner, token, synthetic["weak"], "Shared Weak").status_code == 202

    visitor = TestClient(client.app)
    first = visitor.get(BOARD)
    assert first.status_code == 200 and "Shared Weak" in first.text
    tag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache"
    assert "set-cookie" not in first.headers  # no session made for a page without a form
    assert 'name="csrf"' not in first.text and "Log out" not in first.text
    again = visitor.get(BOARD, headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.headers["etag"] == tag and not again.content
    assert TestClient(client.app).get(BOARD).content == first.content  # the same bytes
    packed = visitor.get(BOARD, headers={"Accept-Encoding": "gzip"})
    assert packed.headers["content-encoding"] == "gzip" and packed.content == first.content
    assert int(packed.headers["content-length"]) < len(first.content) / 2  # sent compressed
    plain = visitor.get(BOARD, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.content == first.content

    # a private run changes nothing a visitor sees; a public one is a new version of the board
    upload(owner, token, synthetic["strong"], "Private Strong", visibility="private")
    private = visitor.get(BOARD, headers={"If-None-Match": tag})
    assert "Private Strong" not in private.text
    upload(owner, token, synthetic["format-noisy"], "Public Noisy")
    changed = visitor.get(BOARD, headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag
    assert "Public Noisy" in changed.text and "Private Strong" not in changed.text

    # a signed-in visitor's board is theirs: not the shared copy, not tagged
    mine = owner.get(BOARD)
    assert "etag" not in mine.headers and "Log out" in mine.text
    # nor is a filtered or sorted view
    sorted_view = visitor.get(f"{BOARD}?sort=nap_acc")
    assert "etag" not in sorted_view.headers and "Public Noisy" in sorted_view.text


def test_the_shared_board_is_answered_from_memory_and_sees_other_processes_within_the_window(
    client: TestClient, web_runtime: Runtime
) -> None:
    """Between two reads of the board's version the page comes from memory (no statement
    sent to the database); a change committed by another process (here: an UPDATE that does
    not go through this process's bump) shows once the recheck window has passed."""
    import time

    from sqlalchemy import event, text

    # a window long enough that a slow machine cannot pass it by accident between two
    # requests; it is shortened below to let it pass on purpose
    web_runtime.board_versions.seconds = 3600
    visitor = TestClient(client.app)
    tag = visitor.get(BOARD).headers["etag"]
    statements: list[str] = []

    def seen(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        statements.append(statement)

    event.listen(web_runtime.engine, "before_cursor_execute", seen)
    try:
        held = visitor.get(BOARD)
        assert held.status_code == 200 and held.headers["etag"] == tag
        assert statements == []  # answered from memory
        with web_runtime.engine.begin() as conn:  # another process scores a submission
            conn.execute(text("UPDATE benchmarks SET generation = generation + 1"))
        statements.clear()
        assert visitor.get(BOARD).headers["etag"] == tag  # within the window: as last read
        assert statements == []
        web_runtime.board_versions.seconds = 0.05
        time.sleep(0.1)
        fresh = visitor.get(BOARD)
        assert fresh.status_code == 200 and fresh.headers["etag"] != tag
        assert any("generation" in s for s in statements)  # read again after the window
    finally:
        event.remove(web_runtime.engine, "before_cursor_execute", seen)

    # 0: every request reads the version
    web_runtime.board_versions.seconds = 0
    tag = fresh.headers["etag"]
    with web_runtime.engine.begin() as conn:
        conn.execute(text("UPDATE benchmarks SET generation = generation + 1"))
    assert visitor.get(BOARD).headers["etag"] != tag


def test_a_held_board_never_answers_for_an_unknown_benchmark_or_board(client: TestClient) -> None:
    visitor = TestClient(client.app)
    assert visitor.get(BOARD).status_code == 200  # the page is held now
    assert visitor.get("/b/medvidbench/board/secret").status_code == 404
    assert visitor.get("/b/nope/board/community").status_code == 404


def test_no_board_or_home_page_reads_the_database_on_the_event_loop(
    client: TestClient, web_runtime: Runtime, tmp_path: Path
) -> None:
    """A read on the event loop would stall every request while the database is slow or
    frozen (the request deadline cannot fire either): the async routes read only memory and
    leave every query to a worker thread."""
    from medvidbench import benchmarks
    from medvidbench.core.config import Settings
    from medvidbench.server.services.catalogue import load_benchmark
    from medvidbench.server.store.db import upgrade
    from medvidbench.server.web.app import create_app

    # a second server hosting two benchmarks, whose "/" is the list of them
    several = Runtime(Settings(data_dir=tmp_path / "several", benchmarks="medvidbench,mcqa-demo"))  # type: ignore[call-arg]
    upgrade(several.engine)
    for slug in ("medvidbench", "mcqa-demo"):
        demo = benchmarks.get(slug).demo
        assert demo is not None
        files = demo.synthesise(tmp_path / slug, 100, 1)
        load_benchmark(several, files["ground_truth"], demo=True, slug=slug)
    owner = TestClient(client.app, follow_redirects=False)
    login(owner, web_runtime)
    visitors = (TestClient(client.app), owner, TestClient(create_app(several)))
    on_loop: list[str] = []

    def seen(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a worker thread
        on_loop.append(statement)

    watched = (web_runtime.engine, several.engine)
    for engine in watched:
        event.listen(engine, "before_cursor_execute", seen)
    try:
        for who in visitors:
            for path in ("/", "/b/medvidbench/", BOARD, BOARD, f"{BOARD}?sort=nap_acc"):
                answer = who.get(path)
                assert answer.status_code == 200, path
        assert "mcqa-demo" in visitors[2].get("/").text  # the list of benchmarks
        web_runtime.board_versions.seconds = 0  # every request reads the version again
        assert visitors[0].get(BOARD).status_code == 200
    finally:
        for engine in watched:
            event.remove(engine, "before_cursor_execute", seen)
        several.engine.dispose()
    assert on_loop == []


def test_with_the_database_away_the_held_board_answers_one_window_then_503(
    client: TestClient, web_runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a visitor of the shared board sees when the database stops answering: the page
    held, for at most about two windows, then the 503 (with Retry-After) every page gives."""
    import time

    from sqlalchemy.exc import OperationalError

    from medvidbench.server.services import boards

    web_runtime.board_versions.seconds = 3600  # a slow machine cannot pass it by accident
    visitor = TestClient(client.app)
    assert visitor.get(BOARD).status_code == 200

    def away(*args: Any) -> None:
        raise OperationalError("SELECT", {}, Exception("connection refused"))

    monkeypatch.setattr(boards, "board_version", away)
    assert visitor.get(BOARD).status_code == 200  # within the window: the page held
    web_runtime.board_versions.seconds = 0.05
    time.sleep(0.15)  # twice the window has passed
    down = visitor.get(BOARD)
    assert down.status_code == 503 and down.headers["retry-after"]
    assert "set-cookie" not in down.headers  # an error page makes no session for a visitor
    assert visitor.get("/b/nope/").status_code == 404 and not visitor.cookies
