"""The unit of the audit trail: one record, produced by the harness, written by the audit writer.

Each record of a run carries ``seq``, a per-run sequence number assigned by the producer. The writer
uses it to restore the producer's order (hand-offs to an async actor arrive unordered) and every
record also carries a natural key, so a batch written twice leaves one copy.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RecordKind = Literal[
    "run_started",  # inserts chat_session (if new) and diagnosis_run
    "agent_step",  # inserts agent_step; natural key (run_id, step_index)
    "tool_invocation",  # inserts tool_invocation; natural key (run_id, tool_call_id)
    "trace_event",  # inserts diagnosis_trace_event; natural key (run_id, sequence_no)
    "reasoning",  # inserts agent_reasoning_audit; natural key (run_id, step_index)
    "run_finished",  # updates diagnosis_run with totals and the released answer
    "feedback",  # updates diagnosis_run.feedback (after the run; no sequence number)
]


class AuditRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: RecordKind
    run_id: str = Field(min_length=1, max_length=64)
    session_id: str = Field(min_length=1, max_length=64)
    seq: int | None = Field(default=None, ge=1, description="Per-run order; None for out-of-run records.")
    ts: float = Field(default_factory=time.time, description="Producer wall-clock time (epoch seconds).")
    data: dict[str, Any] = Field(default_factory=dict)

    def natural_key(self) -> tuple[str, str, str]:
        """What makes two deliveries of this record the same record."""
        d = self.data
        part = {
            "run_started": "",
            "run_finished": "",
            "agent_step": str(d.get("step_index")),
            "reasoning": str(d.get("step_index")),
            "tool_invocation": str(d.get("tool_call_id")),
            "trace_event": str(d.get("sequence_no")),
            "feedback": str(self.ts),
        }[self.kind]
        return (self.run_id, self.kind, part)
