"""Migrations carry existing data forward (SQLite and PostgreSQL).

On SQLite a migration copies a table and drops the original; with foreign keys enforced that
drop would null every user's team and delete every API token. These tests hold data through it.
"""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

from medvidbench.server.store.db import MIGRATIONS, make_engine, upgrade


def migrate_to_0001(engine) -> None:  # type: ignore[no-untyped-def]
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")


def test_0002_gives_existing_teams_an_owner_and_keeps_users_approved(
    tmp_path, postgres_url
) -> None:  # type: ignore[no-untyped-def]
    for url in (f"sqlite:///{tmp_path / 'old.sqlite3'}", postgres_url):
        engine = make_engine(url) if url.startswith("sqlite") else create_engine(url)
        migrate_to_0001(engine)
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO teams (id, name, created_at) VALUES (1, 'Lab', CURRENT_TIMESTAMP)"
                )
            )
            for uid, name in ((1, "first"), (2, "second")):
                conn.execute(
                    text(
                        "INSERT INTO users (id, username, password_hash, role, team_id, is_active, "
                        "created_at) VALUES (:id, :name, 'x', 'submitter', 1, :yes, CURRENT_TIMESTAMP)"
                    ),
                    {"id": uid, "name": name, "yes": True},
                )
            conn.execute(
                text(
                    "INSERT INTO api_tokens (user_id, name, token_hash, prefix, created_at) "
                    "VALUES (1, 't', 'h', 'mvb_', CURRENT_TIMESTAMP)"
                )
            )
        upgrade(engine)  # as every server command runs it
        with engine.begin() as conn:
            assert conn.execute(text("SELECT owner_id FROM teams")).scalar() == 1
            approved = conn.execute(text("SELECT approved FROM users ORDER BY id")).scalars().all()
            assert [bool(a) for a in approved] == [True, True]
            assert conn.execute(text("SELECT COUNT(*) FROM web_sessions")).scalar() == 0
            teams = conn.execute(text("SELECT team_id FROM users ORDER BY id")).scalars().all()
            assert teams == [1, 1]
            tokens = conn.execute(text("SELECT COUNT(*) FROM api_tokens")).scalar()
            assert tokens == 1
        engine.dispose()
