"""a private run holds neither its file nor its model name against other teams

Revision ID: 0008
Revises: 0007

An identical file is refused within an account and its team only (checked under the rows the
upload locks), so its unique index becomes a plain one. A model name is unique among public
submissions that count, and among results reported on one board; a private run's entry on the
community board no longer holds the name there.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

ACTIVE = "status NOT IN ('rejected', 'failed', 'deleted')"
PUBLIC = f"{ACTIVE} AND visibility = 'public'"
# SQLite's unnamed constraints get these names while the table is copied (batch mode).
NAMES = {"uq": "uq_%(table_name)s_%(column_0_N_name)s"}


def _where(condition: str) -> dict[str, Any]:
    return {"sqlite_where": sa.text(condition), "postgresql_where": sa.text(condition)}


def _entries_name_constraint() -> str | None:
    """The name PostgreSQL gave the entries' (board_id, model_key) constraint (None: SQLite)."""
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        return None
    for constraint in sa.inspect(bind).get_unique_constraints("entries"):
        if constraint["column_names"] == ["board_id", "model_key"]:
            return str(constraint["name"])
    raise RuntimeError("entries: the (board_id, model_key) constraint was not found")


def upgrade() -> None:
    op.drop_index("uq_submission_active_file", "submissions")
    op.create_index("ix_submission_file", "submissions", ["benchmark_id", "file_sha256"])
    op.drop_index("uq_submission_active_name", "submissions")
    op.create_index(
        "uq_submission_public_name",
        "submissions",
        ["benchmark_id", "model_key"],
        unique=True,
        **_where(PUBLIC),
    )
    named = _entries_name_constraint()
    if named is None:
        with op.batch_alter_table("entries", naming_convention=NAMES) as batch:
            batch.drop_constraint("uq_entries_board_id_model_key", type_="unique")
    else:
        op.drop_constraint(named, "entries", type_="unique")
    op.create_index("ix_entry_name", "entries", ["board_id", "model_key"])
    op.create_index(
        "uq_entry_reported_name",
        "entries",
        ["board_id", "model_key"],
        unique=True,
        **_where("submission_id IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("uq_entry_reported_name", "entries")
    op.drop_index("ix_entry_name", "entries")
    with op.batch_alter_table("entries") as batch:
        batch.create_unique_constraint("uq_entries_board_id_model_key", ["board_id", "model_key"])
    op.drop_index("uq_submission_public_name", "submissions")
    op.create_index(
        "uq_submission_active_name",
        "submissions",
        ["benchmark_id", "model_key"],
        unique=True,
        **_where(ACTIVE),
    )
    op.drop_index("ix_submission_file", "submissions")
    op.create_index(
        "uq_submission_active_file",
        "submissions",
        ["benchmark_id", "file_sha256"],
        unique=True,
        **_where(ACTIVE),
    )
