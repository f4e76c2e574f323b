"""Reads one run's audit trail back for the trace API (seed e2e §6.2) by exact run_id."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, func, select

from audit.models import (
    AgentReasoningAudit,
    AgentStep,
    Base,
    DiagnosisRun,
    DiagnosisTraceEvent,
    ToolInvocation,
)


class TraceNotFound(LookupError):
    """No run of that id in that session (a run of another session is 'not found' too)."""


def _row(obj: Base, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for col in obj.__table__.columns:
        if col.key in skip:
            continue
        value = getattr(obj, col.key)
        if isinstance(value, datetime):
            value = value.isoformat()
        out[col.key] = value
    return out


def _maybe_json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def completeness(run: DiagnosisRun, timeline: list[dict[str, Any]], stored: dict[str, int]) -> dict[str, Any]:
    """What reached the database against what the run's recorder says it emitted (RUN_FINISHED).

    ``complete`` is true only for a finished run whose every emitted row is stored, whose timeline has
    no gap and whose run row carries its totals. A run still in progress is not complete either.
    """
    finished = next((e for e in timeline if e["event_type"] == "RUN_FINISHED"), None)
    details = (finished or {}).get("details") or {}
    emitted = details.get("emitted")
    missing = (
        {k: int(v) - stored.get(k, 0) for k, v in emitted.items() if int(v) != stored.get(k, 0)}
        if isinstance(emitted, dict)
        else {}
    )
    usage = [e["details"] or {} for e in timeline if e["event_type"] == "MODEL_TOKEN_USAGE"]
    usage_total = sum(int(u.get("total_tokens") or 0) for u in usage)
    usage_unavailable = sum(1 for u in usage if u.get("usage_available") is False)
    finished_total = details.get("run_total_tokens")
    seqs = [e["sequence_no"] for e in timeline]
    contiguous = seqs == list(range(1, len(seqs) + 1))
    run_row_finished = run.total_token_count is not None
    return {
        "complete": isinstance(emitted, dict) and not missing and contiguous and run_row_finished,
        "finished": finished is not None,
        "emitted": emitted,
        "stored": stored,
        "missing": missing,
        "timeline_contiguous": contiguous,
        "audited_total_tokens": usage_total,
        "finished_total_tokens": finished_total,
        "run_total_tokens": run.total_token_count,
        "usage_unavailable": usage_unavailable,
        # Three independent places must agree: the usage events, RUN_FINISHED and the run row.
        "tokens_reconciled": usage_unavailable == 0
        and finished_total is not None
        and usage_total == finished_total == run.total_token_count,
    }


class TraceReader:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _resolve_run(self, session_id: str, run_id: str | None, tenant_id: str | None) -> DiagnosisRun:
        with self.engine.connect() as conn:
            stmt = select(DiagnosisRun).where(DiagnosisRun.session_id == session_id)
            if tenant_id is not None:
                stmt = stmt.where(DiagnosisRun.tenant_id == tenant_id)
            if run_id is not None:
                stmt = stmt.where(DiagnosisRun.run_id == run_id)
            else:
                stmt = stmt.order_by(DiagnosisRun.created_at.desc()).limit(1)
            row = conn.execute(stmt).first()
        if row is None:
            if run_id:
                raise TraceNotFound(f"no run {run_id} in session {session_id}")
            raise TraceNotFound(f"session {session_id} has no runs")
        run = DiagnosisRun(**row._mapping)
        return run

    def trace(self, session_id: str, run_id: str | None = None, tenant_id: str | None = None) -> dict[str, Any]:
        run = self._resolve_run(session_id, run_id, tenant_id)
        rid = run.run_id
        with self.engine.connect() as conn:
            steps = [
                AgentStep(**r._mapping)
                for r in conn.execute(
                    select(AgentStep).where(AgentStep.run_id == rid).order_by(AgentStep.step_index, AgentStep.id)
                )
            ]
            tools = [
                ToolInvocation(**r._mapping)
                for r in conn.execute(
                    select(ToolInvocation).where(ToolInvocation.run_id == rid).order_by(ToolInvocation.id)
                )
            ]
            events = [
                DiagnosisTraceEvent(**r._mapping)
                for r in conn.execute(
                    select(DiagnosisTraceEvent)
                    .where(DiagnosisTraceEvent.run_id == rid)
                    .order_by(DiagnosisTraceEvent.sequence_no)
                )
            ]
            reasoning_rows = conn.scalar(
                select(func.count()).select_from(AgentReasoningAudit).where(AgentReasoningAudit.run_id == rid)
            )
        step_rows = []
        for s in steps:
            row = _row(s)
            row["model_input"] = _maybe_json(s.model_input)
            row["model_output"] = _maybe_json(s.model_output)
            step_rows.append(row)
        timeline = [_row(e) for e in events]
        stored = {
            "timeline_events": len(timeline),
            "agent_steps": len(step_rows),
            "tool_invocations": len(tools),
            "reasoning": int(reasoning_rows or 0),
        }
        return {
            "run": _row(run),
            "steps": step_rows,
            "toolInvocations": [_row(t) for t in tools],
            "timeline": timeline,
            "summary": completeness(run, timeline, stored),
        }

    def reasoning(self, session_id: str, run_id: str | None = None, tenant_id: str | None = None) -> dict[str, Any]:
        run = self._resolve_run(session_id, run_id, tenant_id)
        with self.engine.connect() as conn:
            rows = [
                _row(AgentReasoningAudit(**r._mapping))
                for r in conn.execute(
                    select(AgentReasoningAudit)
                    .where(AgentReasoningAudit.run_id == run.run_id)
                    .order_by(AgentReasoningAudit.step_index)
                )
            ]
        return {"run_id": run.run_id, "session_id": run.session_id, "steps": rows}

    def runs(self, session_id: str, tenant_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The session's runs, newest first (for the console's run list)."""
        stmt = select(
            DiagnosisRun.run_id,
            DiagnosisRun.status,
            DiagnosisRun.release_outcome,
            DiagnosisRun.query,
            DiagnosisRun.total_token_count,
            DiagnosisRun.created_at,
        ).where(DiagnosisRun.session_id == session_id)
        if tenant_id is not None:
            stmt = stmt.where(DiagnosisRun.tenant_id == tenant_id)
        with self.engine.connect() as conn:
            rows = conn.execute(stmt.order_by(DiagnosisRun.created_at.desc()).limit(limit))
            return [{**r._mapping, "created_at": r.created_at.isoformat() if r.created_at else None} for r in rows]

    def session_of(self, run_id: str) -> str:
        with self.engine.connect() as conn:
            sid = conn.scalar(select(DiagnosisRun.session_id).where(DiagnosisRun.run_id == run_id))
        if sid is None:
            raise TraceNotFound(f"no run {run_id}")
        return str(sid)

    def run_exists(self, session_id: str, run_id: str, tenant_id: str | None = None) -> bool:
        try:
            self._resolve_run(session_id, run_id, tenant_id)
        except TraceNotFound:
            return False
        return True
