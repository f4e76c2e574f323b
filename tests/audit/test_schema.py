"""The schema comes from the Alembic migrations, on SQLite and on MariaDB."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from audit.db import make_engine
from audit.migrate import current_revision, upgrade
from audit.models import Base

TABLES = {
    "chat_session",
    "diagnosis_run",
    "agent_step",
    "tool_invocation",
    "diagnosis_trace_event",
    "agent_reasoning_audit",
}


def test_migrations_create_the_seed_schema(db_url: str) -> None:
    upgrade(db_url)
    upgrade(db_url)  # idempotent
    engine = make_engine(db_url)
    try:
        insp = inspect(engine)
        assert TABLES <= set(insp.get_table_names())
        step_indexes = {ix["name"]: ix for ix in insp.get_indexes("agent_step")}
        assert {"idx_session_step", "idx_agent_step_run_step", "idx_agent_name"} <= set(step_indexes)
        assert step_indexes["idx_agent_step_run_step"]["column_names"] == ["run_id", "step_index"]
        tool_cols = {c["name"] for c in insp.get_columns("tool_invocation")}
        assert {"step_id", "input_params", "retrieval_details", "relevance_level", "is_truncated"} <= tool_cols
        reasoning_cols = {c["name"] for c in insp.get_columns("agent_reasoning_audit")}
        assert {"reasoning_text", "assistant_text"} <= reasoning_cols
        assert current_revision(engine) == "0002"
        run_cols = {c["name"] for c in insp.get_columns("diagnosis_run")}
        assert "tokens_reconciled" not in run_cols and "total_token_count" in run_cols
        # The models and the migrations describe the same schema.
        with engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert diffs == []
    finally:
        engine.dispose()
