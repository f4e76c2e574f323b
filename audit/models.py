"""SQLAlchemy models of the audit tables (seeds: e2e §6, agent-step-table, data contracts §9).

The same schema runs on MySQL/MariaDB and SQLite; Alembic migrations in ``audit/migrations`` create
it. Natural keys are unique indexes so that a batch retried after a partial failure adds nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Index,
    Integer,
    String,
    Text,
    func,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# BIGINT autoincrement needs INTEGER on SQLite to alias the rowid.
BigId = BigInteger().with_variant(Integer(), "sqlite")
LongText = Text().with_variant(mysql.LONGTEXT(), "mysql").with_variant(mysql.LONGTEXT(), "mariadb")
Timestamp = DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql").with_variant(mysql.DATETIME(fsp=6), "mariadb")


class Base(DeclarativeBase):
    pass


class ChatSession(Base):
    __tablename__ = "chat_session"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    tenant_id: Mapped[str | None] = mapped_column(String(64))
    title: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now(), nullable=False)
    updated_at: Mapped[datetime | None] = mapped_column(Timestamp)


class DiagnosisRun(Base):
    __tablename__ = "diagnosis_run"
    __table_args__ = (Index("idx_run_session_created", "session_id", "created_at"),)

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(64), nullable=False)
    tenant_id: Mapped[str | None] = mapped_column(String(64))
    agent_flow: Mapped[str] = mapped_column(String(32), nullable=False, default="CHAT")
    status: Mapped[str] = mapped_column(String(32), nullable=False)
    intent: Mapped[str | None] = mapped_column(String(32))
    release_outcome: Mapped[str | None] = mapped_column(String(32))
    content_type: Mapped[str | None] = mapped_column(String(32))
    query: Mapped[str] = mapped_column(Text, nullable=False)
    answer: Mapped[str | None] = mapped_column(LongText)
    conclusion: Mapped[str | None] = mapped_column(Text)
    self_evaluation: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    total_duration_ms: Mapped[int | None] = mapped_column(Integer)
    total_token_count: Mapped[int | None] = mapped_column(Integer)
    input_token_count: Mapped[int | None] = mapped_column(Integer)
    output_token_count: Mapped[int | None] = mapped_column(Integer)
    model_call_count: Mapped[int | None] = mapped_column(Integer)
    usage_unavailable_count: Mapped[int | None] = mapped_column(Integer)
    step_count: Mapped[int | None] = mapped_column(Integer)
    tool_call_count: Mapped[int | None] = mapped_column(Integer)
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    feedback: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(Timestamp, nullable=False)
    finished_at: Mapped[datetime | None] = mapped_column(Timestamp)


class AgentStep(Base):
    __tablename__ = "agent_step"
    __table_args__ = (
        Index("idx_session_step", "session_id", "step_index"),
        Index("idx_agent_step_run_step", "run_id", "step_index", unique=True),
        Index("idx_agent_name", "agent_name"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(64), nullable=False)
    run_id: Mapped[str | None] = mapped_column(String(64))
    step_index: Mapped[int] = mapped_column(Integer, nullable=False)
    agent_name: Mapped[str] = mapped_column(String(32), nullable=False)
    model_input: Mapped[str | None] = mapped_column(Text)
    model_output: Mapped[str | None] = mapped_column(Text)
    thought: Mapped[str | None] = mapped_column(Text)
    has_tool_call: Mapped[bool | None] = mapped_column(Boolean)
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    token_count: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(Timestamp, nullable=False)


class ToolInvocation(Base):
    __tablename__ = "tool_invocation"
    __table_args__ = (
        Index("uq_tool_run_call", "run_id", "tool_call_id", unique=True),
        Index("idx_tool_session", "session_id"),
        Index("idx_tool_step", "step_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(64), nullable=False)
    run_id: Mapped[str] = mapped_column(String(64), nullable=False)
    step_id: Mapped[int | None] = mapped_column(BigInteger)
    tool_call_id: Mapped[str] = mapped_column(String(128), nullable=False)
    tool_name: Mapped[str] = mapped_column(String(64), nullable=False)
    input_params: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    output_preview: Mapped[str | None] = mapped_column(Text)
    output_length: Mapped[int | None] = mapped_column(Integer)
    retrieval_layer: Mapped[str | None] = mapped_column(String(32))
    l0_match_count: Mapped[int | None] = mapped_column(Integer)
    l1_match_count: Mapped[int | None] = mapped_column(Integer)
    is_truncated: Mapped[bool | None] = mapped_column(Boolean)
    relevance_level: Mapped[str | None] = mapped_column(String(32))
    dedup_reason: Mapped[str | None] = mapped_column(String(128))
    retrieval_details: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    success: Mapped[bool] = mapped_column(Boolean, nullable=False)
    status: Mapped[str | None] = mapped_column(String(16))
    error_message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(Timestamp, nullable=False)


class DiagnosisTraceEvent(Base):
    __tablename__ = "diagnosis_trace_event"
    __table_args__ = (Index("uq_trace_run_seq", "run_id", "sequence_no", unique=True),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(64), nullable=False)
    session_id: Mapped[str] = mapped_column(String(64), nullable=False)
    sequence_no: Mapped[int] = mapped_column(Integer, nullable=False)
    phase: Mapped[str] = mapped_column(String(32), nullable=False)
    event_type: Mapped[str] = mapped_column(String(64), nullable=False)
    status: Mapped[str | None] = mapped_column(String(32))
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(Timestamp, nullable=False)


class AgentReasoningAudit(Base):
    __tablename__ = "agent_reasoning_audit"
    __table_args__ = (Index("uq_reasoning_run_step", "run_id", "step_index", unique=True),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(64), nullable=False)
    run_id: Mapped[str] = mapped_column(String(64), nullable=False)
    step_index: Mapped[int] = mapped_column(Integer, nullable=False)
    agent_name: Mapped[str] = mapped_column(String(32), nullable=False)
    reasoning_text: Mapped[str | None] = mapped_column(LongText)
    assistant_text: Mapped[str | None] = mapped_column(LongText)
    reasoning_bytes: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    assistant_bytes: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    created_at: Mapped[datetime] = mapped_column(Timestamp, nullable=False)
