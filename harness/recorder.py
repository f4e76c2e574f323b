"""Per-run audit bookkeeping: sequence numbers, the timeline, token accounting, the run's finish.

The pipeline calls these methods as things happen; each call hands one or more ``AuditRecord``s to
the sink without waiting. RUN_FINISHED carries what this recorder emitted (timeline events, agent
steps, tool invocations, reasoning rows, tokens), so a reader of the stored trail can compare what
reached the database with what was sent: the check lives with the reader, never here, where it would
compare two of the recorder's own counters.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from audit.records import AuditRecord, RecordKind
from harness.protocols import AuditSink

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class RunRecorder:
    def __init__(
        self,
        sink: AuditSink,
        session_id: str,
        run_id: str,
        query: str,
        tenant_id: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sink = sink
        self.session_id = session_id
        self.run_id = run_id
        self.query = query
        self.tenant_id = tenant_id
        self.clock = clock
        self.started_at = clock()
        self._seq = 0
        self._timeline_seq = 0
        self.model_call_count = 0
        self.usage_unavailable_count = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.step_count = 0
        self.agent_step_rows = 0
        self.reasoning_rows = 0
        self.tool_call_count = 0
        self.finished = False
        self.bound_step_index: int | None = None
        self.emit_failures = 0

    # -- plumbing ----------------------------------------------------------------------------

    def _emit(self, kind: RecordKind, data: dict[str, Any]) -> None:
        self._seq += 1
        record = AuditRecord(
            kind=kind, run_id=self.run_id, session_id=self.session_id, seq=self._seq, ts=self.clock(), data=data
        )
        try:
            self.sink.emit(record)
        except Exception as err:
            # The sink's contract is a non-blocking hand-off that buffers and spills through outages;
            # one that raises anyway must not take the user's answer down with it. Loud, but not fatal.
            self.emit_failures += 1
            log.error("audit sink rejected %s #%d of run %s: %s", kind, self._seq, self.run_id, type(err).__name__)

    @property
    def records_emitted(self) -> int:
        return self._seq

    def timeline(self, phase: str, event_type: str, status: str | None = None, **details: Any) -> int:
        self._timeline_seq += 1
        self._emit(
            "trace_event",
            {
                "sequence_no": self._timeline_seq,
                "phase": phase,
                "event_type": event_type,
                "status": status,
                "details": details,
            },
        )
        return self._timeline_seq

    # -- run lifecycle -----------------------------------------------------------------------

    def start(self, agent_flow: str = "CHAT", **context: Any) -> None:
        """``context``: the run's clock and origin (harness/scope.py), kept on RUN_STARTED for replay."""
        self._emit("run_started", {"query": self.query, "agent_flow": agent_flow, "tenant_id": self.tenant_id})
        self.timeline("RUN", "RUN_STARTED", "RUNNING", agent_flow=agent_flow, **context)

    def model_usage(
        self, phase: str, component: str, component_round: int, usage: Usage | None, duration_ms: int | None = None
    ) -> None:
        """One MODEL_TOKEN_USAGE event per model call (seed e2e §8.1), with the call's duration when known
        (the OpenTelemetry export builds each call's span from it: audit/genai_traces.py)."""
        timing = {} if duration_ms is None else {"duration_ms": duration_ms}
        self.model_call_count += 1
        if usage is None:
            self.usage_unavailable_count += 1
            self.timeline(
                phase,
                "MODEL_TOKEN_USAGE",
                None,
                component=component,
                component_round=component_round,
                input_tokens=0,
                output_tokens=0,
                total_tokens=0,
                usage_available=False,
                **timing,
            )
            return
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.timeline(
            phase,
            "MODEL_TOKEN_USAGE",
            None,
            component=component,
            component_round=component_round,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            total_tokens=usage.total_tokens,
            usage_available=True,
            **timing,
        )

    # -- agent steps and tools ---------------------------------------------------------------

    def begin_step(self) -> int:
        """Bind the next agent step; tool calls issued by it carry its index (seed e2e §3.4.1)."""
        self.bound_step_index = self.step_count
        self.step_count += 1
        return self.bound_step_index

    def agent_step(
        self,
        step_index: int,
        *,
        message_roles: list[str],
        tool_names: list[str],
        assistant_text: str,
        reasoning_text: str | None,
        duration_ms: int,
        usage: Usage | None,
        agent_name: str = "diagnosis_agent",
        phase: str = "AGENT",
    ) -> None:
        """The agent_step row (bounded metadata only), AGENT_MODEL_STEP, and the reasoning audit."""
        reasoning_bytes = len((reasoning_text or "").encode())
        assistant_bytes = len(assistant_text.encode())
        model_output = {
            "has_text": bool(assistant_text.strip()),
            "tool_names": tool_names,
            "reasoning_available": reasoning_text is not None,
            "reasoning_bytes": reasoning_bytes,
            "assistant_bytes": assistant_bytes,
            "content_source": "reasoning" if reasoning_text else "assistant",
        }
        mirror = reasoning_text if reasoning_text else assistant_text
        self.agent_step_rows += 1
        self._emit(
            "agent_step",
            {
                "step_index": step_index,
                "agent_name": agent_name,
                "model_input": {"message_count": len(message_roles), "roles": sorted(set(message_roles))},
                "model_output": model_output,
                "thought": mirror[:500] if mirror else None,
                "has_tool_call": bool(tool_names),
                "duration_ms": duration_ms,
                "token_count": usage.total_tokens if usage else None,
            },
        )
        self.timeline(
            phase,
            "AGENT_MODEL_STEP",
            None,
            step_index=step_index,
            agent_name=agent_name,
            tool_names=tool_names,
            duration_ms=duration_ms,
            token_count=usage.total_tokens if usage else None,
        )
        if reasoning_text is not None or assistant_text:
            self.reasoning_rows += 1
            self._emit(
                "reasoning",
                {
                    "step_index": step_index,
                    "agent_name": agent_name,
                    "reasoning_text": reasoning_text,
                    "assistant_text": assistant_text,
                },
            )

    def tool_invocation(
        self,
        *,
        tool_call_id: str,
        tool_name: str,
        request: dict[str, Any],
        status: str,
        output_preview: str,
        output_length: int,
        duration_ms: int,
        error_message: str | None = None,
        retrieval: dict[str, Any] | None = None,
    ) -> None:
        """One tool_invocation row bound to the current agent step, and its TOOL_INVOCATION event."""
        self.tool_call_count += 1
        retrieval = retrieval or {}
        data: dict[str, Any] = {
            "tool_call_id": tool_call_id,
            "tool_name": tool_name,
            "step_index": self.bound_step_index,
            "request": request,
            "success": status != "error",
            "status": status,
            "output_preview": output_preview,
            "output_length": output_length,
            "duration_ms": duration_ms,
            "error_message": error_message,
            **retrieval,
        }
        self._emit("tool_invocation", data)
        self.timeline(
            "TOOL",
            "TOOL_INVOCATION",
            status,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            step_index=self.bound_step_index,
            duration_ms=duration_ms,
            relevance_level=retrieval.get("relevance_level"),
            evidence_status=(retrieval.get("retrieval_details") or {}).get("evidence_status"),
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def finish(
        self,
        status: str,
        *,
        intent: str | None = None,
        release_outcome: str | None = None,
        content_type: str | None = None,
        answer: str | None = None,
        conclusion: str | None = None,
        self_evaluation: dict[str, Any] | None = None,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> None:
        if self.finished:
            return
        self.finished = True
        self.bound_step_index = None
        duration_ms = int((self.clock() - self.started_at) * 1000)
        totals = {
            "model_call_count": self.model_call_count,
            "run_input_tokens": self.input_tokens,
            "run_output_tokens": self.output_tokens,
            "run_total_tokens": self.total_tokens,
            "usage_unavailable_count": self.usage_unavailable_count,
            "duration_ms": duration_ms,
            # What this run handed to the sink, RUN_FINISHED itself included (seed e2e §8.1's
            # run_total_tokens above); the trace reader compares the stored rows with it.
            "emitted": {
                "timeline_events": self._timeline_seq + 1,
                "agent_steps": self.agent_step_rows,
                "tool_invocations": self.tool_call_count,
                "reasoning": self.reasoning_rows,
            },
        }
        self.timeline("RUN", "RUN_FINISHED", status, **totals, release_outcome=release_outcome)
        data: dict[str, Any] = {
            "status": status,
            "intent": intent,
            "release_outcome": release_outcome,
            "content_type": content_type,
            "total_duration_ms": duration_ms,
            "total_token_count": self.total_tokens,
            "input_token_count": self.input_tokens,
            "output_token_count": self.output_tokens,
            "model_call_count": self.model_call_count,
            "usage_unavailable_count": self.usage_unavailable_count,
            "step_count": self.step_count,
            "tool_call_count": self.tool_call_count,
            "error_code": error_code,
        }
        if answer is not None:
            data["answer"] = answer
        if conclusion is not None:
            data["conclusion"] = conclusion
        if self_evaluation is not None:
            data["self_evaluation"] = self_evaluation
        if error_message is not None:
            data["error_message"] = error_message
        self._emit("run_finished", data)
