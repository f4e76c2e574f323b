"""Synchronous writes of audit record batches (called from the writer's worker thread).

A batch is one transaction. Inserts ignore rows whose natural key exists, so replaying a batch
after a failure that happened after the commit (lost acknowledgement) creates no duplicates.
Redaction happens here, the one place every record passes before it reaches the database.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, Table, select, text, update
from sqlalchemy.dialects import mysql as mysql_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from audit.models import (
    AgentReasoningAudit,
    AgentStep,
    ChatSession,
    DiagnosisRun,
    DiagnosisTraceEvent,
    ToolInvocation,
)
from audit.records import AuditRecord
from audit.redaction import redact_text, redact_tree, safe_input_params

_RUN_FINISH_FIELDS = (
    "status",
    "intent",
    "release_outcome",
    "content_type",
    "total_duration_ms",
    "total_token_count",
    "input_token_count",
    "output_token_count",
    "model_call_count",
    "usage_unavailable_count",
    "step_count",
    "tool_call_count",
    "error_code",
)


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC).replace(tzinfo=None)


def _text(value: Any, limit: int | None = None) -> str | None:
    if value is None:
        return None
    text = redact_text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return text[:limit] if limit else text


def _json_text(value: Any) -> str | None:
    """agent_step.model_input/model_output are TEXT holding bounded JSON metadata (seed)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(redact_tree(value), ensure_ascii=False, sort_keys=True)


class AuditStore:
    """Writes batches of ``AuditRecord`` into the audit tables."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name

    # -- helpers -----------------------------------------------------------------------------

    def _insert_ignore(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        if self.dialect in ("mysql", "mariadb"):
            stmt = mysql_dialect.insert(table)
            first_col = next(iter(table.primary_key.columns))
            conn.execute(stmt.on_duplicate_key_update({first_col.name: stmt.inserted[first_col.name]}), rows)
        elif self.dialect == "sqlite":
            conn.execute(sqlite_dialect.insert(table).on_conflict_do_nothing(), rows)
        else:  # pragma: no cover - only MySQL and SQLite are supported targets
            raise RuntimeError(f"unsupported audit database dialect: {self.dialect}")

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    # -- the batch ---------------------------------------------------------------------------

    def write_batch(self, records: Sequence[AuditRecord]) -> None:
        by_kind: dict[str, list[AuditRecord]] = defaultdict(list)
        for rec in records:
            by_kind[rec.kind].append(rec)
        with self.engine.begin() as conn:
            # Dependency order: run rows, then steps (tools need their ids), then the rest.
            self._runs_started(conn, by_kind["run_started"])
            self._steps(conn, by_kind["agent_step"])
            self._tools(conn, by_kind["tool_invocation"])
            self._trace_events(conn, by_kind["trace_event"])
            self._reasoning(conn, by_kind["reasoning"])
            self._runs_finished(conn, by_kind["run_finished"])
            self._feedback(conn, by_kind["feedback"])

    def _runs_started(self, conn: Connection, recs: list[AuditRecord]) -> None:
        sessions = []
        runs = []
        for r in recs:
            query = _text(r.data.get("query", "")) or ""
            sessions.append(
                {
                    "session_id": r.session_id,
                    "tenant_id": r.data.get("tenant_id"),
                    "title": query[:200],
                    "created_at": _dt(r.ts),
                    "updated_at": _dt(r.ts),
                }
            )
            runs.append(
                {
                    "run_id": r.run_id,
                    "session_id": r.session_id,
                    "tenant_id": r.data.get("tenant_id"),
                    "agent_flow": r.data.get("agent_flow", "CHAT"),
                    "status": "RUNNING",
                    "query": query,
                    "created_at": _dt(r.ts),
                }
            )
        self._insert_ignore(conn, ChatSession.__table__, sessions)  # type: ignore[arg-type]
        self._insert_ignore(conn, DiagnosisRun.__table__, runs)  # type: ignore[arg-type]

    def _steps(self, conn: Connection, recs: list[AuditRecord]) -> None:
        rows = []
        for r in recs:
            d = r.data
            rows.append(
                {
                    "session_id": r.session_id,
                    "run_id": r.run_id,
                    "step_index": int(d["step_index"]),
                    "agent_name": d.get("agent_name", "diagnosis_agent"),
                    "model_input": _json_text(d.get("model_input")),
                    "model_output": _json_text(d.get("model_output")),
                    "thought": _text(d.get("thought"), 2000),
                    "has_tool_call": bool(d.get("has_tool_call", False)),
                    "duration_ms": d.get("duration_ms"),
                    "token_count": d.get("token_count"),
                    "created_at": _dt(r.ts),
                }
            )
        self._insert_ignore(conn, AgentStep.__table__, rows)  # type: ignore[arg-type]

    def _step_ids(self, conn: Connection, run_ids: Iterable[str]) -> dict[tuple[str, int], int]:
        ids = sorted(set(run_ids))
        if not ids:
            return {}
        rows = conn.execute(
            select(AgentStep.run_id, AgentStep.step_index, AgentStep.id).where(AgentStep.run_id.in_(ids))
        )
        return {(str(run_id), int(idx)): int(step_id) for run_id, idx, step_id in rows}

    def _tools(self, conn: Connection, recs: list[AuditRecord]) -> None:
        if not recs:
            return
        step_ids = self._step_ids(conn, (r.run_id for r in recs))
        rows = []
        for r in recs:
            d = r.data
            step_index = d.get("step_index")
            step_id = step_ids.get((r.run_id, int(step_index))) if step_index is not None else None
            details = d.get("retrieval_details")
            rows.append(
                {
                    "session_id": r.session_id,
                    "run_id": r.run_id,
                    "step_id": step_id,
                    "tool_call_id": str(d["tool_call_id"]),
                    "tool_name": d["tool_name"],
                    "input_params": safe_input_params(d.get("request"), str(d["tool_call_id"]), step_id),
                    "output_preview": _text(d.get("output_preview"), 500),
                    "output_length": d.get("output_length"),
                    "retrieval_layer": d.get("retrieval_layer"),
                    "l0_match_count": d.get("l0_match_count"),
                    "l1_match_count": d.get("l1_match_count"),
                    "is_truncated": d.get("is_truncated"),
                    "relevance_level": d.get("relevance_level"),
                    "dedup_reason": d.get("dedup_reason"),
                    "retrieval_details": redact_tree(details) if details is not None else None,
                    "duration_ms": d.get("duration_ms"),
                    "success": bool(d.get("success", False)),
                    "status": d.get("status"),
                    "error_message": _text(d.get("error_message"), 2000),
                    "created_at": _dt(r.ts),
                }
            )
        self._insert_ignore(conn, ToolInvocation.__table__, rows)  # type: ignore[arg-type]

    def _trace_events(self, conn: Connection, recs: list[AuditRecord]) -> None:
        rows = [
            {
                "run_id": r.run_id,
                "session_id": r.session_id,
                "sequence_no": int(r.data["sequence_no"]),
                "phase": r.data["phase"],
                "event_type": r.data["event_type"],
                "status": r.data.get("status"),
                "details": redact_tree(r.data.get("details") or {}),
                "created_at": _dt(r.ts),
            }
            for r in recs
        ]
        self._insert_ignore(conn, DiagnosisTraceEvent.__table__, rows)  # type: ignore[arg-type]

    def _reasoning(self, conn: Connection, recs: list[AuditRecord]) -> None:
        rows = []
        for r in recs:
            reasoning = _text(r.data.get("reasoning_text"))
            assistant = _text(r.data.get("assistant_text"))
            rows.append(
                {
                    "session_id": r.session_id,
                    "run_id": r.run_id,
                    "step_index": int(r.data["step_index"]),
                    "agent_name": r.data.get("agent_name", "diagnosis_agent"),
                    "reasoning_text": reasoning,
                    "assistant_text": assistant,
                    "reasoning_bytes": len((reasoning or "").encode()),
                    "assistant_bytes": len((assistant or "").encode()),
                    "created_at": _dt(r.ts),
                }
            )
        self._insert_ignore(conn, AgentReasoningAudit.__table__, rows)  # type: ignore[arg-type]

    def _runs_finished(self, conn: Connection, recs: list[AuditRecord]) -> None:
        for r in recs:
            d = r.data
            values: dict[str, Any] = {k: d[k] for k in _RUN_FINISH_FIELDS if k in d}
            if "answer" in d:
                values["answer"] = _text(d["answer"])
            if "conclusion" in d:
                values["conclusion"] = _text(d["conclusion"])
            if "error_message" in d:
                values["error_message"] = _text(d["error_message"], 2000)
            if "self_evaluation" in d:
                values["self_evaluation"] = redact_tree(d["self_evaluation"])
            values["finished_at"] = _dt(r.ts)
            conn.execute(update(DiagnosisRun).where(DiagnosisRun.run_id == r.run_id).values(**values))

    def _feedback(self, conn: Connection, recs: list[AuditRecord]) -> None:
        for r in recs:
            feedback = {**redact_tree(r.data), "at": _dt(r.ts).isoformat()}
            conn.execute(update(DiagnosisRun).where(DiagnosisRun.run_id == r.run_id).values(feedback=feedback))
