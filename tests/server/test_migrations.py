"""Migrations carry existing data forward (SQLite and PostgreSQL).

On SQLite a migration copies a table and drops the original; with foreign keys enforced that
drop would null every user's team and delete every API token. These tests hold data through it.
"""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

from medvidbench.server.store.db import MIGRATIONS, make_engine, upgrade


def migrate_to(engine, revision: str) -> None:  # type: ignore[no-untyped-def]
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def at_revision(tmp_path, postgres_url, revision: str):  # type: ignore[no-untyped-def]
    """A database of each kind (SQLite, PostgreSQL) migrated to ``revision``, in turn."""
    for url in (f"sqlite:///{tmp_path / f'at-{revision}.sqlite3'}", postgres_url):
        engine = make_engine(url) if url.startswith("sqlite") else create_engine(url)
        migrate_to(engine, revision)
        yield engine
        engine.dispose()


def test_0002_gives_existing_teams_an_owner_and_keeps_users_approved(
    tmp_path, postgres_url
) -> None:  # type: ignore[no-untyped-def]
    for engine in at_revision(tmp_path, postgres_url, "0001"):
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


def test_0003_makes_every_existing_test_set_medvidbench_s_and_keeps_its_boards(
    tmp_path, postgres_url
) -> None:  # type: ignore[no-untyped-def]
    for engine in at_revision(tmp_path, postgres_url, "0002"):
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO benchmarks (id, name, gt_sha256, sample_count, task_counts, "
                    "is_demo, is_current, generation, created_at) VALUES (1, 'MedVidBench', "
                    ":sha, 6245, '{}', :no, :yes, 4, CURRENT_TIMESTAMP)"
                ),
                {"sha": "a" * 64, "no": False, "yes": True},
            )
            conn.execute(
                text("INSERT INTO boards (id, benchmark_id, kind) VALUES (1, 1, 'official')")
            )
        upgrade(engine)
        with engine.begin() as conn:
            row = conn.execute(text("SELECT slug, is_current, generation FROM benchmarks")).one()
            assert (row.slug, bool(row.is_current), row.generation) == ("medvidbench", True, 4)
            board = conn.execute(text("SELECT benchmark_id, kind FROM boards")).one()
            assert tuple(board) == (1, "official")


def _insert_submission(conn, sid: int, key: str, visibility: str, sha: str) -> None:  # type: ignore[no-untyped-def]
    conn.execute(
        text(
            "INSERT INTO submissions (id, benchmark_id, model_name, model_key, organisation, "
            "settings, file_sha256, file_size, stored, record_count, verdict, missing_tasks, "
            "status, attempts, step_attempts, created_at, hidden, visibility) VALUES (:id, 1, "
            ":key, :key, '', '{}', :sha, 1, :no, 1, 'complete', '[]', 'scored', 0, 0, "
            "CURRENT_TIMESTAMP, :no, :visibility)"
        ),
        {"id": sid, "key": key, "sha": sha, "no": False, "visibility": visibility},
    )


def _insert_entry(conn, board: int, key: str, submission: int | None) -> None:  # type: ignore[no-untyped-def]
    conn.execute(
        text(
            "INSERT INTO entries (board_id, submission_id, model_name, model_key, team_name, "
            "reported, verified, baseline, created_at) VALUES (:board, :sub, :key, :key, '', "
            ":no, :no, :no, CURRENT_TIMESTAMP)"
        ),
        {"board": board, "sub": submission, "key": key, "no": False},
    )


def test_0008_lets_private_runs_share_names_and_files_and_keeps_entries(
    tmp_path, postgres_url
) -> None:  # type: ignore[no-untyped-def]
    import pytest
    from sqlalchemy.exc import IntegrityError

    for engine in at_revision(tmp_path, postgres_url, "0007"):
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO benchmarks (id, slug, name, gt_sha256, sample_count, "
                    "task_counts, is_demo, is_current, generation, created_at) VALUES (1, "
                    "'medvidbench', 'MedVidBench', :sha, 1, '{}', :no, :yes, 1, "
                    "CURRENT_TIMESTAMP)"
                ),
                {"sha": "a" * 64, "no": False, "yes": True},
            )
            conn.execute(
                text("INSERT INTO boards (id, benchmark_id, kind) VALUES (2, 1, 'community')")
            )
            _insert_submission(conn, 1, "secret", "private", "f" * 64)
            _insert_entry(conn, 2, "secret", 1)
            _insert_entry(conn, 2, "reported", None)
        upgrade(engine)
        with engine.begin() as conn:  # another team's private run: same name, same file
            _insert_submission(conn, 2, "secret", "private", "f" * 64)
            _insert_entry(conn, 2, "secret", 2)
            assert conn.execute(text("SELECT COUNT(*) FROM entries")).scalar() == 3
        for clash in (
            lambda c: _insert_entry(c, 2, "reported", None),  # a reported name, twice
            lambda c: (  # a public name, twice
                _insert_submission(c, 3, "open", "public", "1" * 64),
                _insert_submission(c, 4, "open", "public", "2" * 64),
            ),
            lambda c: _insert_entry(c, 2, "x", 1),  # a submission twice on one board
        ):
            with pytest.raises(IntegrityError), engine.begin() as conn:
                clash(conn)


def test_0012_indexes_the_audit_log_by_target_and_action_and_goes_back(
    tmp_path, postgres_url
) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import inspect

    def indexes(engine) -> set[str]:  # type: ignore[no-untyped-def]
        return {str(i["name"]) for i in inspect(engine).get_indexes("audit_log")}

    for engine in at_revision(tmp_path, postgres_url, "0011"):
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO audit_log (at, actor_name, action, target, detail) VALUES "
                    "(CURRENT_TIMESTAMP, 'ann', 'submission.delete', 'submission:7', '{}')"
                )
            )
        assert "ix_audit_log_target_action" not in indexes(engine)
        upgrade(engine)
        assert "ix_audit_log_target_action" in indexes(engine)
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0011")
        assert "ix_audit_log_target_action" not in indexes(engine)
        with engine.begin() as conn:  # the rows stay
            assert conn.execute(text("SELECT COUNT(*) FROM audit_log")).scalar() == 1
