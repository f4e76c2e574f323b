"""Every run as one OpenTelemetry trace, following the GenAI semantic conventions (development status;
the attribute names of ``gen_ai_latest_experimental``: ``gen_ai.provider.name``, not the older
``gen_ai.system``), exported over OTLP/HTTP.

The spans are built from the audit records themselves: ``GenAiTraceSink`` is an ``AuditSink`` that hands
every record on unchanged and keeps a run's records until its ``run_finished``, then turns them into
spans, so the trace and the audit trail cannot disagree:

- ``invoke_agent raydiag`` (root): the run, RUN_STARTED to RUN_FINISHED; ``gen_ai.conversation.id`` is the
  session; the run's token totals and status;
- ``chat {model}``: one per MODEL_TOKEN_USAGE event (one per model call), ending when the call's usage was
  recorded and lasting its ``duration_ms``; ``gen_ai.usage.input_tokens`` / ``output_tokens``;
- ``execute_tool {tool}``: one per tool invocation (``gen_ai.tool.name``, ``gen_ai.tool.call.id``), an error
  status when it failed; a ``lookup_knowledge`` call gets a child ``retrieval knowledge`` span with the
  lookup's attempts, evidence status and relevance.

Message contents (the question, the released answer) go on the spans only with ``capture_content``,
and then redacted as the audit trail redacts them; tool arguments and outputs never do.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context

from audit.records import AuditRecord
from audit.redaction import redact_text

log = logging.getLogger(__name__)

MAX_OPEN_RUNS = 1000  # runs whose RUN_FINISHED never comes (a crash) are dropped oldest first


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _timed(r: AuditRecord, duration_ms: Any) -> tuple[int, int]:
    """(start, end) in ns of what a record reports when it ended and how long it took."""
    end = _ns(r.ts)
    return end - int(duration_ms or 0) * 1_000_000, end


class GenAiTraceSink:
    def __init__(
        self,
        inner: Any,
        exporter: SpanExporter,
        *,
        model: str,
        provider: str,
        capture_content: bool = False,
        service_name: str = "raydiag",
    ) -> None:
        self.inner = inner
        self.model = model
        self.provider = provider
        self.capture_content = capture_content
        self.provider_sdk = TracerProvider(resource=Resource.create({"service.name": service_name}))
        self.provider_sdk.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider_sdk.get_tracer("raydiag.audit.genai_traces")
        self._runs: OrderedDict[str, list[AuditRecord]] = OrderedDict()
        self.exported_runs = 0

    def emit(self, record: AuditRecord) -> None:
        self.inner.emit(record)  # the audit trail first: a tracing fault must never cost a record
        if record.seq is None:
            return  # out-of-run records (feedback) belong to no trace
        records = self._runs.setdefault(record.run_id, [])
        records.append(record)
        if record.kind == "run_finished":
            del self._runs[record.run_id]
            try:
                self._export(records)
                self.exported_runs += 1
            except Exception as err:  # tracing is an observer: the run and its audit trail go on
                log.warning("trace of run %s not built: %s", record.run_id, err)
        while len(self._runs) > MAX_OPEN_RUNS:
            self._runs.popitem(last=False)

    def force_flush(self, timeout_ms: int = 10_000) -> bool:
        return self.provider_sdk.force_flush(timeout_ms)

    def shutdown(self) -> None:
        self.provider_sdk.shutdown()

    # -- building one run's trace ------------------------------------------------------------

    def _common(self, session_id: str) -> dict[str, Any]:
        return {"gen_ai.provider.name": self.provider, "gen_ai.conversation.id": session_id}

    def _export(self, records: Sequence[AuditRecord]) -> None:
        started = next((r for r in records if r.kind == "run_started"), None)
        finished = next(r for r in records if r.kind == "run_finished")
        if started is None:
            return  # a partial run (its start was dropped): no honest trace to build
        d = finished.data
        attrs = {
            **self._common(finished.session_id),
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "raydiag",
            "gen_ai.request.model": self.model,
            "gen_ai.usage.input_tokens": int(d.get("input_token_count") or 0),
            "gen_ai.usage.output_tokens": int(d.get("output_token_count") or 0),
            "raydiag.run_id": finished.run_id,
            "raydiag.agent_flow": str(started.data.get("agent_flow", "")),
            "raydiag.status": str(d.get("status", "")),
            "raydiag.release_outcome": str(d.get("release_outcome") or ""),
            "raydiag.content_type": str(d.get("content_type") or ""),
        }
        if self.capture_content:
            attrs["gen_ai.input.messages"] = redact_text(str(started.data.get("query", "")))
            if d.get("answer"):
                attrs["gen_ai.output.messages"] = redact_text(str(d["answer"]))
        root = self.tracer.start_span(
            "invoke_agent raydiag", kind=SpanKind.INTERNAL, start_time=_ns(started.ts), attributes=attrs
        )
        if d.get("status") == "FAILED":
            root.set_status(Status(StatusCode.ERROR, str(d.get("error_code") or "FAILED")))
        parent = set_span_in_context(root)
        for r in records:
            if r.kind == "trace_event" and r.data.get("event_type") == "MODEL_TOKEN_USAGE":
                self._chat_span(r, parent)
            elif r.kind == "tool_invocation":
                self._tool_span(r, parent)
        root.end(end_time=_ns(finished.ts))

    def _chat_span(self, r: AuditRecord, parent: Any) -> None:
        u = r.data.get("details") or {}
        start, end = _timed(r, u.get("duration_ms"))
        span = self.tracer.start_span(
            f"chat {self.model}",
            context=parent,
            kind=SpanKind.CLIENT,
            start_time=start,
            attributes={
                **self._common(r.session_id),
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": self.model,
                "gen_ai.usage.input_tokens": int(u.get("input_tokens") or 0),
                "gen_ai.usage.output_tokens": int(u.get("output_tokens") or 0),
                "raydiag.component": str(u.get("component", "")),
                "raydiag.phase": str(r.data.get("phase", "")),
                "raydiag.usage_available": bool(u.get("usage_available", True)),
            },
        )
        span.end(end_time=end)

    def _tool_span(self, r: AuditRecord, parent: Any) -> None:
        t = r.data
        start, end = _timed(r, t.get("duration_ms"))
        name = str(t.get("tool_name", "tool"))
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            start_time=start,
            attributes={
                **self._common(r.session_id),
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": str(t.get("tool_call_id", "")),
                "gen_ai.tool.type": "function",
                "raydiag.tool.status": str(t.get("status") or ""),
            },
        )
        if not t.get("success", False):
            span.set_status(Status(StatusCode.ERROR, str(t.get("status") or "error")))
        details = t.get("retrieval_details")
        if isinstance(details, dict):
            self._retrieval_span(r, details, span, start, end)
        span.end(end_time=end)

    def _retrieval_span(self, r: AuditRecord, details: dict[str, Any], tool: Span, start: int, end: int) -> None:
        attempts = details.get("attempts") or []
        searched = sum(int(a.get("duration_ms") or 0) for a in attempts) * 1_000_000
        top = next(
            (a.get("top_similarity") for a in attempts if a.get("name") == details.get("selected_attempt")), None
        )
        span = self.tracer.start_span(
            "retrieval knowledge",
            context=set_span_in_context(tool),
            kind=SpanKind.CLIENT,
            start_time=max(start, end - searched),
            attributes={
                "gen_ai.operation.name": "retrieval",
                "gen_ai.data_source.id": "knowledge",
                "db.system.name": "milvus",
                "raydiag.search_mode": str(details.get("search_mode", "")),
                "raydiag.evidence_status": str(details.get("evidence_status", "")),
                "raydiag.relevance_level": str(details.get("relevance_level", "")),
                "raydiag.attempts": len(attempts),
                "raydiag.selected_attempt": str(details.get("selected_attempt") or ""),
                "raydiag.evidence_block_count": int(details.get("evidence_block_count") or 0),
                **({"raydiag.top_similarity": float(top)} if top is not None else {}),
            },
        )
        if details.get("evidence_status") == "ERROR":
            span.set_status(Status(StatusCode.ERROR, "knowledge search unavailable"))
        span.end(end_time=end)
