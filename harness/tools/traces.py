"""query_traces: where a request's time went in the window, from the spans, against the baseline.

Per call edge (``caller->callee``) and per operation: calls and p90 latency in the window beside the
baseline's, the most slowed first; a ``service`` narrows both to the edges and operations it is part
of. First, where calls slowed *between* services (``telemetry/analysis/edge_delay.py``): the service
where the slowed edges meet, which edges, and by how much — a delay's address, not its callers'.
Evidence keys name the service measured first (the callee of an edge):
``edge:<service where slowed edges meet>:<window start>``,
``trace:<callee>:<caller>-><callee>:<window start>`` and ``span:<service>:<operation>:<window start>``.
Offered where the telemetry has traces.
"""

from __future__ import annotations

from typing import Any

from harness.tools.base import ToolResult
from harness.tools.telemetry import _WINDOW_PROPS, TelemetryView, _error, _num, edge_delay_text
from telemetry.analysis.edge_delay import edge_delay_deviations, span_gap_deviations
from telemetry.analysis.traces import Timing, baseline_spans, edge_timings, most_changed, operation_timings
from telemetry.clock import TimeSpecError, minute
from telemetry.model import BackendUnavailable

MAX_TRACE_ROWS = 8


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


def _text(kind: str, t: Timing) -> str:
    base = (
        f"baseline p90 {t.baseline_p90_s:.3g} s over {_calls(t.baseline_calls)}"
        if t.baseline_p90_s is not None
        else "not seen in the baseline"
    )
    ratio = f", {t.ratio:.1f}x" if t.ratio is not None else ""
    return f"{kind} {t.name}: {_calls(t.calls)} in the window, p90 {t.p90_s:.3g} s ({base}{ratio})"


def _row(t: Timing) -> dict[str, Any]:
    return {
        "name": t.name,
        "calls": t.calls,
        "p90_s": float(f"{t.p90_s:.4g}"),
        "baseline_calls": t.baseline_calls,
        "baseline_p90_s": None if t.baseline_p90_s is None else float(f"{t.baseline_p90_s:.4g}"),
        "ratio": None if t.ratio is None else round(t.ratio, 2),
    }


class QueryTracesTool:
    name = "query_traces"
    description = (
        "Where the time went, from distributed traces: where calls slowed between services (the service the "
        "slowed edges meet), then per call edge (caller->callee) and per operation the calls and p90 latency in "
        "the window against the baseline, the most slowed first. Give 'service' to see only its edges and "
        "operations."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "service": {"type": "string", "description": "service name; omit for every service"},
            **_WINDOW_PROPS,
            "baseline": {"type": "string", "description": "baseline length, e.g. 30m"},
        },
        "additionalProperties": False,
    }

    def __init__(self, view: TelemetryView) -> None:
        self.view = view

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        try:
            window = self.view.window(args)
            baseline = self.view.baseline(window, args)
            spans = await self.view.backend.spans(baseline.start, window.end)
        except (TimeSpecError, BackendUnavailable) as err:
            return _error(str(err))
        frame = self.view.frame(window, baseline)
        if spans is None:
            return ToolResult("no_data", {**frame, "error": "the backend has no traces"}, preview="no traces")
        in_window = [s for s in spans if s.start >= window.start]
        before = baseline_spans([s for s in spans if s.start >= baseline.start], window.start)
        service = str(args.get("service") or "").strip()
        edges = edge_timings(in_window, before)
        operations = operation_timings(in_window, before)
        if service:
            edges = [t for t in edges if service in t.name.split("->")]
            operations = [t for t in operations if t.name.split(" ", 1)[0] == service]
        if not edges and not operations:
            msg = f"no spans for {service!r} in the window" if service else "no spans in the window"
            return ToolResult("no_data", {**frame, "error": msg}, preview=msg)
        at = minute(window.start)
        meets = edge_delay_deviations(span_gap_deviations([s for s in spans if s.start >= baseline.start], window))
        if service:
            meets = [d for d in meets if service in d.instance]
        edges, operations = most_changed(edges)[:MAX_TRACE_ROWS], most_changed(operations)[:MAX_TRACE_ROWS]
        evidence = [{"key": f"edge:{d.service}:{at}", "text": edge_delay_text(d)} for d in meets[:MAX_TRACE_ROWS]]
        evidence += [{"key": f"trace:{t.name.split('->')[1]}:{t.name}:{at}", "text": _text("call", t)} for t in edges]
        evidence += [
            {"key": f"span:{t.name.replace(' ', ':', 1)}:{at}", "text": _text("operation", t)} for t in operations
        ]
        out = {
            **frame,
            "spans_in_window": len(in_window),
            "baseline_spans": len(before),
            "slowed_between": [
                {"where": d.service, "edges": d.instance, "added_s": _num(d.peak), "deviation": round(d.score, 1)}
                for d in meets[:MAX_TRACE_ROWS]
            ],
            "edges": [_row(t) for t in edges],
            "operations": [_row(t) for t in operations],
            "evidence": evidence,
        }
        if service:
            out["service"] = service
        top = (edges or operations)[0]
        return ToolResult("success", out, preview=f"{len(in_window)} spans; most changed {top.name}")
