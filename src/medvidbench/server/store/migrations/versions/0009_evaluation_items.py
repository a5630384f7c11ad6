"""per-item results of an evaluation, kept for the item browser of public-label benchmarks

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "evaluation_items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "evaluation_id",
            sa.Integer(),
            sa.ForeignKey("evaluations.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("task", sa.String(length=40), nullable=False),
        sa.Column("sample_index", sa.Integer(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("parsed", sa.Boolean(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("values", sa.JSON(), nullable=True),
        sa.Column("note", sa.String(length=200), nullable=False),
        sa.Column("box", sa.JSON(), nullable=True),
    )
    op.create_index(
        "ix_evaluation_items_task", "evaluation_items", ["evaluation_id", "task", "sample_index"]
    )


def downgrade() -> None:
    op.drop_index("ix_evaluation_items_task", table_name="evaluation_items")
    op.drop_table("evaluation_items")
