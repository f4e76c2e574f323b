"""drop diagnosis_run.tokens_reconciled

The recorder's write-time flag compared two of its own counters and could not disagree; the trace
reader reconciles the stored MODEL_TOKEN_USAGE events with RUN_FINISHED and the run row instead.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03 23:40:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch mode: SQLite rebuilds the table, MySQL/MariaDB alter it in place.
    with op.batch_alter_table("diagnosis_run") as batch:
        batch.drop_column("tokens_reconciled")


def downgrade() -> None:
    with op.batch_alter_table("diagnosis_run") as batch:
        batch.add_column(sa.Column("tokens_reconciled", sa.Boolean(), nullable=True))
