"""every submission keeps a log of its steps (the submission page's log)

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "submission_events",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "submission_id",
            sa.Integer(),
            sa.ForeignKey("submissions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=30), nullable=False),
        sa.Column("message", sa.String(length=1000), nullable=False),
    )
    op.create_index("ix_submission_events_submission_id", "submission_events", ["submission_id"])


def downgrade() -> None:
    op.drop_index("ix_submission_events_submission_id", "submission_events")
    op.drop_table("submission_events")
