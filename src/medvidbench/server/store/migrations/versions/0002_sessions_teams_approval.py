"""server-side sessions, team owners and join requests, account approval, per-step attempts,
board generations

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_web_sessions_user_id", "web_sessions", ["user_id"])
    with op.batch_alter_table("teams") as batch:
        batch.add_column(sa.Column("owner_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_teams_owner", "users", ["owner_id"], ["id"], ondelete="SET NULL"
        )
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("requested_team_id", sa.Integer(), nullable=True))
        batch.add_column(
            sa.Column("approved", sa.Boolean(), nullable=False, server_default=sa.true())
        )
        batch.add_column(sa.Column("signup_address", sa.String(length=64), nullable=True))
        batch.create_foreign_key(
            "fk_users_requested_team", "teams", ["requested_team_id"], ["id"], ondelete="SET NULL"
        )
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(
            sa.Column("step_attempts", sa.Integer(), nullable=False, server_default="0")
        )
    with op.batch_alter_table("benchmarks") as batch:
        batch.add_column(sa.Column("generation", sa.Integer(), nullable=False, server_default="0"))
    # An existing team's first member becomes its owner.
    op.execute(
        "UPDATE teams SET owner_id = (SELECT MIN(users.id) FROM users "
        "WHERE users.team_id = teams.id)"
    )


def downgrade() -> None:
    with op.batch_alter_table("benchmarks") as batch:
        batch.drop_column("generation")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("step_attempts")
    with op.batch_alter_table("users") as batch:
        batch.drop_constraint("fk_users_requested_team", type_="foreignkey")
        batch.drop_column("signup_address")
        batch.drop_column("approved")
        batch.drop_column("requested_team_id")
    with op.batch_alter_table("teams") as batch:
        batch.drop_constraint("fk_teams_owner", type_="foreignkey")
        batch.drop_column("owner_id")
    op.drop_index("ix_web_sessions_user_id", "web_sessions")
    op.drop_table("web_sessions")
