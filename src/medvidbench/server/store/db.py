"""Engines, sessions and migrations for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from medvidbench.core.errors import NotMigratedError

MIGRATIONS = Path(__file__).parent / "migrations"
WRITES = "medvidbench_writes"  # the execution option of a transaction() (SQLite: IMMEDIATE)
# msgspec reads and writes JSON columns several times faster than the standard library.
JSON_IO: dict[str, Any] = {
    "json_serializer": lambda o: msgspec.json.encode(o).decode(),
    "json_deserializer": msgspec.json.decode,
}


def database_url(data_dir: Path, url: str | None) -> str:
    """The configured URL, or a SQLite file in the data folder."""
    return url or f"sqlite:///{(data_dir / 'medvidbench.sqlite3').resolve()}"


def make_engine(url: str, connect_timeout: float = 10) -> Engine:
    """An engine with the settings each backend needs.

    A server database (PostgreSQL): a new connection that is not made within
    ``connect_timeout`` seconds fails (a database behind a firewall that drops packets would
    otherwise hold the request for minutes). SQLite: WAL (readers never block the writer, nor
    the writer them), foreign keys on, a 30 s busy timeout; a :func:`transaction` (every write)
    begins IMMEDIATE, so that two writers queue instead of failing with "database is locked"
    when one upgrades a read lock, and a read-only session begins DEFERRED, so that a page never
    waits for a writer (a board took 3.8 s while another connection held a 4 s write).
    """
    if not url.startswith("sqlite"):
        return create_engine(
            url,
            # libpq's keyword takes whole seconds (at least 2: it treats 1 as 2)
            connect_args={"connect_timeout": max(2, round(connect_timeout))},
            pool_pre_ping=True,
            pool_size=10,
            max_overflow=30,
            **JSON_IO,
        )
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": 30},
        pool_size=20,
        max_overflow=40,
        **JSON_IO,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        writes = connection.get_execution_options().get(WRITES, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN DEFERRED")

    return engine


def aware(value: datetime) -> datetime:
    """A stored time as an aware UTC datetime: SQLite hands times back without their zone
    (every time stored is UTC)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def make_sessions(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(sessions: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose work is committed on success and rolled back on any error: every write
    goes through one (a bare session only reads: on SQLite it takes no write lock)."""
    with sessions() as session, session.begin():
        session.connection(execution_options={WRITES: True})  # SQLite: BEGIN IMMEDIATE
        yield session


@cache
def _scripts() -> Any:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(config)


def head_revision() -> str:
    """The newest migration this code ships (its revision id, e.g. ``0009``)."""
    head: str | None = _scripts().get_current_head()
    if head is None:
        raise RuntimeError("no migrations found")
    return head


def known_revisions() -> set[str]:
    """Every migration this code ships (a database at another one was made by a newer
    release)."""
    return {script.revision for script in _scripts().walk_revisions()}


def current_revision(engine: Engine) -> str | None:
    """The migration the database is at (None: no schema yet).

    Raises:
        sqlalchemy.exc.OperationalError: the database cannot be reached.
    """
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def check_migrated(engine: Engine) -> str:
    """The database's revision when it is the code's migration head.

    Raises:
        NotMigratedError: it is not (no schema, an older or an unknown revision).
        sqlalchemy.exc.OperationalError: the database cannot be reached.
    """
    current, head = current_revision(engine), head_revision()
    if current != head:
        newer = current is not None and current not in known_revisions()
        raise NotMigratedError(current, head, newer=newer)
    return head


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Bring the database schema to the newest migration; returns the revisions before (None:
    no schema) and after."""
    from alembic import command
    from alembic.config import Config

    before = current_revision(engine)
    if before is not None and before not in known_revisions():
        raise NotMigratedError(before, head_revision(), newer=True)  # not alembic's traceback
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        raw = connection.connection.dbapi_connection
        if sqlite:
            # SQLite alters a table by copying it and dropping the original; with foreign keys
            # enforced, that drop would run every ON DELETE (SET NULL, CASCADE) on the rows that
            # point at it. The pragma only takes effect outside a transaction, hence here.
            raw.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        try:
            with connection.begin():
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
                if sqlite:
                    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise RuntimeError(f"the migration broke foreign keys: {broken[:5]}")
        finally:
            if sqlite:
                raw.execute("PRAGMA foreign_keys=ON")  # type: ignore[union-attr]
    return before, head_revision()
