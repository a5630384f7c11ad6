"""every test set belongs to a benchmark plug-in (slug); existing ones are MedVidBench's

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("benchmarks") as batch:
        batch.add_column(
            sa.Column("slug", sa.String(length=40), nullable=False, server_default="medvidbench")
        )
        batch.create_index("ix_benchmarks_slug", ["slug"])


def downgrade() -> None:
    with op.batch_alter_table("benchmarks") as batch:
        batch.drop_index("ix_benchmarks_slug")
        batch.drop_column("slug")
