"""The telemetry tools the model sees: rank_anomalies, query_metrics, query_logs, service_dependencies.

They wrap ``telemetry/`` (backends, windows, analysis) the way lookup_knowledge wraps ``rag/``: the
analysis happens here, the model reads the result and cites it. Every tool takes an optional window
(``start``/``end``: RFC 3339, epoch seconds, or relative like ``-30m``) resolved against the run's
clock; the default window runs from the incident start the question named (else 30 minutes back) to
the clock, the baseline is the 30 minutes before the window. Outputs are bounded (caps below); every
citable fact is an ``evidence`` block with a stable key:
``anomaly:<service>:<window start>``, ``metric:<service>:<signal>:<since>``,
``logtpl:<service>:<template id>``, ``dep:<caller>-><callee>`` (query_traces: ``harness/tools/traces.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from harness.tools.base import ToolResult
from telemetry.analysis.derived import MODALITIES
from telemetry.analysis.deviation import Deviation, deviation, downsample
from telemetry.analysis.drain import Drain
from telemetry.analysis.edge_delay import EDGE_DELAY
from telemetry.analysis.lost_events import SIGNAL as SIGNAL_LOST_EVENTS
from telemetry.analysis.ranking import ServiceAnomaly, rank_anomalies, seconds
from telemetry.clock import TimeSpecError, Window, baseline_window, iso, minute, parse_span, resolve_window
from telemetry.model import BackendUnavailable, TelemetryBackend
from telemetry.signals import signal_spec

MAX_RANKED = 5
WEAK_LEADS = 3  # leads shown when no service crosses the threshold
MAX_SIGNALS = 8
MAX_SERIES_POINTS = 12
MAX_LOG_LINES = 20
MAX_TEMPLATES = 10
MAX_MESSAGE_CHARS = 300
MAX_EDGES = 60

_WINDOW_PROPS: dict[str, Any] = {
    "start": {
        "type": "string",
        "description": "window start: RFC 3339, epoch seconds or -30m; default: the incident start",
    },
    "end": {"type": "string", "description": "window end (default: now, the run's clock)"},
}


class TelemetryView:
    """One run's view of a backend: its clock, its default window and baseline."""

    def __init__(
        self,
        backend: TelemetryBackend,
        as_of: float,
        incident_start: float | None = None,
        window_s: float = 1800.0,
        baseline_s: float = 1800.0,
        modalities: tuple[str, ...] = MODALITIES,
    ) -> None:
        self.backend = backend
        self.as_of = as_of
        self.incident_start = incident_start
        self.window_s = window_s
        self.baseline_s = baseline_s
        self.modalities = modalities

    def window(self, args: dict[str, Any]) -> Window:
        return resolve_window(args.get("start"), args.get("end"), self.as_of, self.incident_start, self.window_s)

    def baseline(self, window: Window, args: dict[str, Any]) -> Window:
        return baseline_window(window, parse_span(args.get("baseline"), self.baseline_s))

    def frame(self, window: Window, baseline: Window) -> dict[str, Any]:
        return {"clock": iso(self.as_of), "window": window.describe(), "baseline": baseline.describe()}


def _num(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else float(f"{value:.{digits}g}")


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "share":  # of an operation's requests (lost_events)
        return f"{value:.0%} of requests"
    if unit == "bytes" and abs(value) >= 1 << 20:
        return f"{value / (1 << 20):.1f} MiB"
    return f"{value:.4g}{(' ' + unit) if unit else ''}"


def _deviation_text(d: Deviation) -> str:
    if d.signal == EDGE_DELAY:
        return edge_delay_text(d)
    unit = signal_spec(d.signal).unit
    # An edge or a lost event says what deviated; a pod name is only where.
    where = f" ({d.instance})" if "->" in d.instance or d.signal == SIGNAL_LOST_EVENTS else ""
    since = f" since {minute(d.onset)}" if d.onset is not None else ""
    return (
        f"{d.signal}{where} {_fmt(d.baseline_median, unit)} -> {_fmt(d.peak, unit)}, "
        f"{d.score:.0f}x its baseline spread{since}"
    )


def edge_delay_text(d: Deviation) -> str:
    """``calls between services slowed where they meet X: 2 of 3 of its edges (a->X, X->b), +583 ms``."""
    since = f" since {minute(d.onset)}" if d.onset is not None else ""
    added = f", {seconds(d.peak)} longer (median)" if d.peak is not None else ""
    return (
        f"calls between services slowed where they meet {d.service}: {d.instance}{added}, "
        f"{d.score:.0f}x their baseline spread{since}"
    )


def _error(message: str) -> ToolResult:
    return ToolResult("error", {"error": message}, preview=message[:120], error=message)


class _TelemetryTool(ABC):
    """A tool over the run's telemetry view; a bad time or an unreachable Prometheus is an error value."""

    def __init__(self, view: TelemetryView) -> None:
        self.view = view

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        try:
            return await self._run(args)
        except (TimeSpecError, BackendUnavailable) as err:
            return _error(str(err))

    @abstractmethod
    async def _run(self, args: dict[str, Any]) -> ToolResult: ...


class RankAnomaliesTool(_TelemetryTool):
    name = "rank_anomalies"
    description = (
        "Rank services by how far their metrics, error log lines and span latencies in the window deviate from their "
        "own baseline (robust deviation), and by log lines or calls their requests stopped making, "
        "blaming the service at the bottom of a slow call chain rather than its callers. Each entry: the deviating "
        "signals, since when, and the suspected fault category. Call this first."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {**_WINDOW_PROPS, "baseline": {"type": "string", "description": "baseline length, e.g. 30m"}},
        "additionalProperties": False,
    }

    async def _run(self, args: dict[str, Any]) -> ToolResult:
        window = self.view.window(args)
        baseline = self.view.baseline(window, args)
        ranked = await rank_anomalies(self.view.backend, window, baseline, modalities=self.view.modalities)
        frame = self.view.frame(window, baseline)
        anomalous = [a for a in ranked if a.anomalous]
        # Nothing over the threshold (a fault whose baseline already holds earlier faults of the same pod
        # looks like this) still has leads: the strongest deviations, marked weak, never dressed up as anomalies.
        shown = anomalous[:MAX_RANKED] or [a for a in ranked if a.score > 0][:WEAK_LEADS]
        if not shown:
            out = {**frame, "ranking": [], "services_checked": len(ranked), "evidence": []}
            return ToolResult("no_data", out, preview=f"no deviation among {len(ranked)} services")
        entries, evidence = [], []
        for n, a in enumerate(shown, 1):
            key = f"anomaly:{a.service}:{minute(window.start)}"
            entries.append(self._entry(n, a, key))
            evidence.append({"key": key, "text": self._text(n, len(ranked), a)})
        out = {**frame, "ranking": entries, "services_checked": len(ranked), "evidence": evidence}
        if not anomalous:
            out["note"] = "no signal crossed the anomaly threshold; these are the strongest weak deviations"
        top = shown[0]
        strength = "" if anomalous else "weak "
        return ToolResult(
            "success", out, preview=f"{strength}top {top.service} ({top.category}) of {len(ranked)} services"
        )

    @staticmethod
    def _entry(n: int, a: ServiceAnomaly, key: str) -> dict[str, Any]:
        return {
            "rank": n,
            "service": a.service,
            "score": round(a.score, 2),
            "anomalous": a.anomalous,
            "suspected_category": a.category,
            "reason": a.category_reason,
            "since": minute(a.onset) if a.onset is not None else None,
            "explained_by": a.explained_by,
            "signals": [
                {
                    "signal": d.signal,
                    "instance": d.instance,
                    "baseline_median": _num(d.baseline_median),
                    "peak": _num(d.peak),
                    "deviation": round(d.score, 1),
                }
                for d in a.deviations[:3]
                if d.score > 0
            ],
            "key": key,
        }

    @staticmethod
    def _text(n: int, total: int, a: ServiceAnomaly) -> str:
        signals = "; ".join(_deviation_text(d) for d in a.deviations[:2] if d.score > 0)
        blame = f"; its callee {a.explained_by} is anomalous too" if a.explained_by else ""
        weak = "" if a.anomalous else " (weak: below the anomaly threshold)"
        return f"{a.service} ranks {n} of {total}{weak}: {signals}. Suspected {a.category}: {a.category_reason}{blame}."


class QueryMetricsTool(_TelemetryTool):
    name = "query_metrics"
    description = (
        "A service's metrics in the window against its baseline: per signal the baseline median and MAD, the window's "
        "peak, the robust deviation, since when, and a short series. Without 'signal', every signal of the service."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "service": {"type": "string", "description": "service name, e.g. currencyservice"},
            "signal": {"type": "string", "description": "cpu, memory, latency_p90, latency_p99, error_rate, ..."},
            **_WINDOW_PROPS,
        },
        "required": ["service"],
        "additionalProperties": False,
    }

    async def _run(self, args: dict[str, Any]) -> ToolResult:
        backend = self.view.backend
        service = str(args.get("service", "")).strip()
        known = await backend.signals(service)
        if not known:
            return ToolResult(
                "no_data",
                {"error": f"no metrics for service {service!r}", "services": await backend.services()},
                preview=f"no metrics {service}",
            )
        wanted = str(args.get("signal") or "").strip()
        if wanted and wanted not in known:
            return ToolResult(
                "no_data", {"error": f"no signal {wanted!r} for {service!r}", "signals": known}, preview=f"no {wanted}"
            )
        window = self.view.window(args)
        baseline = self.view.baseline(window, args)
        rows = []
        for name in [wanted] if wanted else known:
            for s in await backend.series(name, baseline.start, window.end, service):
                rows.append((deviation(s, window, baseline, signal_spec(name)), s))
        if not rows:
            out = {**self.view.frame(window, baseline), "service": service, "signals": [], "evidence": []}
            return ToolResult("no_data", out, preview=f"{service}: no samples in the window")
        rows.sort(key=lambda r: -r[0].score)
        signals: list[dict[str, Any]] = []
        evidence: list[dict[str, str]] = []
        for d, s in rows[:MAX_SIGNALS]:
            key = f"metric:{service}:{d.signal}:{minute(d.onset if d.onset is not None else window.start)}"
            unit = signal_spec(d.signal).unit
            signals.append(
                {
                    "signal": d.signal,
                    "unit": unit,
                    "instance": d.instance,
                    "baseline_median": _num(d.baseline_median),
                    "baseline_mad": _num(d.baseline_mad),
                    "peak": _num(d.peak),
                    "last": _num(d.last),
                    "deviation": round(d.score, 1),
                    "since": minute(d.onset) if d.onset is not None else None,
                    "series": [[minute(t), _num(v)] for t, v in downsample(s, window, MAX_SERIES_POINTS)],
                    "key": key,
                }
            )
            if not any(e["key"] == key for e in evidence):
                evidence.append({"key": key, "text": f"{service} {_deviation_text(d)}"})
        out = {**self.view.frame(window, baseline), "service": service, "signals": signals, "evidence": evidence}
        top = rows[0][0]
        return ToolResult("success", out, preview=f"{service}: {top.signal} {top.score:.0f}x")


class QueryLogsTool(_TelemetryTool):
    name = "query_logs"
    description = (
        "A service's logs in the window: matching lines (newest last) and the log templates mined from them, each "
        "counted in the window and in the baseline; new and surging templates first."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "service": {"type": "string", "description": "service name"},
            "contains": {"type": "string", "description": "space-separated words every line must contain"},
            "level": {"type": "string", "description": "only this level, e.g. ERROR"},
            **_WINDOW_PROPS,
        },
        "required": ["service"],
        "additionalProperties": False,
    }

    async def _run(self, args: dict[str, Any]) -> ToolResult:
        backend = self.view.backend
        service = str(args.get("service", "")).strip()
        window = self.view.window(args)
        baseline = self.view.baseline(window, args)
        records = await backend.logs(service, baseline.start, window.end)
        if records is None:
            return ToolResult(
                "no_data",
                {"error": f"no logs for service {service!r}", "services": await backend.log_services()},
                preview=f"no logs {service}",
            )
        terms = [t.lower() for t in str(args.get("contains") or "").split()]
        level = str(args.get("level") or "").upper()
        picked = [r for r in records if all(t in r.message.lower() for t in terms) and (not level or r.level == level)]
        drain = Drain()
        in_window: dict[int, int] = {}
        in_base: dict[int, int] = {}
        for r in picked:
            tpl = drain.add(r.message)
            counts = in_window if window.contains(r.ts) else in_base
            counts[tpl.id] = counts.get(tpl.id, 0) + 1
        lines = [r for r in picked if window.contains(r.ts)]
        frame = {**self.view.frame(window, baseline), "service": service}
        if not lines:
            out = {
                **frame,
                "total_lines": 0,
                "baseline_lines": len(picked),
                "matches": [],
                "templates": [],
                "evidence": [],
            }
            return ToolResult("no_data", out, preview=f"{service}: 0 lines in the window")
        base_total = sum(in_base.values())
        templates: list[dict[str, Any]] = []
        for tpl in drain.templates:
            n, b = in_window.get(tpl.id, 0), in_base.get(tpl.id, 0)
            if not n:
                continue
            status = (
                "new"
                if b == 0
                else ("surging" if n / max(window.seconds, 1) > 2 * b / max(baseline.seconds, 1) else "steady")
            )
            templates.append(
                {
                    "id": tpl.id,
                    "template": tpl.text[:MAX_MESSAGE_CHARS],
                    "count": n,
                    "baseline_count": b,
                    "status": status,
                }
            )
        order = {"new": 0, "surging": 1, "steady": 2}
        templates.sort(key=lambda t: (order[str(t["status"])], -int(t["count"])))
        templates = templates[:MAX_TEMPLATES]
        evidence = [
            {
                "key": f"logtpl:{service}:{t['id']}",
                "text": f"{service} log template '{t['template']}': {t['count']} lines in the window, "
                f"{t['baseline_count']} in the baseline ({t['status']})",
            }
            for t in templates
        ]
        out = {
            **frame,
            "total_lines": len(lines),
            "baseline_lines": base_total,
            "baseline_note": None
            if base_total
            else "no log lines in the baseline window: every template counts as new",
            "matches": [
                {"ts": iso(r.ts), "level": r.level, "message": r.message[:MAX_MESSAGE_CHARS]}
                for r in lines[-MAX_LOG_LINES:]
            ],
            "templates": templates,
            "evidence": evidence,
        }
        return ToolResult("success", out, preview=f"{service}: {len(lines)} lines, {len(templates)} templates")


class ServiceDependenciesTool(_TelemetryTool):
    name = "service_dependencies"
    description = "Who calls whom: a service's callers and callees, or the whole call graph without 'service'."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"service": {"type": "string", "description": "service name; omit for the whole graph"}},
        "additionalProperties": False,
    }

    async def _run(self, args: dict[str, Any]) -> ToolResult:
        edges = await self.view.backend.edges()
        service = str(args.get("service") or "").strip()
        if service:
            edges = [e for e in edges if service in (e.caller, e.callee)]
        if not edges:
            msg = f"no call graph edges for {service!r}" if service else "the backend has no call graph"
            return ToolResult("no_data", {"error": msg}, preview=msg)
        shown = edges[:MAX_EDGES]
        out: dict[str, Any] = {
            "edges": [{"caller": e.caller, "callee": e.callee} for e in shown],
            "evidence": [{"key": f"dep:{e.caller}->{e.callee}", "text": f"{e.caller} calls {e.callee}"} for e in shown],
            "truncated": len(edges) > len(shown),
        }
        if service:
            out["service"] = service
            out["callers"] = sorted({e.caller for e in edges if e.callee == service})
            out["callees"] = sorted({e.callee for e in edges if e.caller == service})
        return ToolResult("success", out, preview=f"{len(edges)} edges")
