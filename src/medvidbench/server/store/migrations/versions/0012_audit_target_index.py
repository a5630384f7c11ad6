"""an index of the audit log by target and action (the private-run count reads a board's
uploads and deletions from it on every ranking)

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_audit_log_target_action", "audit_log", ["target", "action"])


def downgrade() -> None:
    op.drop_index("ix_audit_log_target_action", table_name="audit_log")
