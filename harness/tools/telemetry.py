"""query_logs and query_metrics over a telemetry backend.

``FileTelemetry`` is the embedded default. It reads
- the bundled demo telemetry: ``logs/<service>.jsonl`` ({"ts", "level", "message"} per line) and
  ``metrics/<service>/<metric>.csv`` (timestamp,value);
- Loghub structured CSVs (``<System>_2k.log_structured.csv``; service = the system, lower case);
- NAB metric CSVs (``<group>/<series>.csv``; service = the group, metric = the series).
A real backend (Prometheus HTTP API, Loki, Elasticsearch) implements the same ``TelemetryBackend``.
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.tools.base import ToolResult


@dataclass(frozen=True)
class LogLine:
    ts: str
    level: str
    message: str


@dataclass(frozen=True)
class Point:
    ts: str
    value: float


class TelemetryBackend(Protocol):
    def services(self) -> list[str]: ...
    def logs(self, service: str) -> list[LogLine] | None: ...
    def metric_names(self, service: str) -> list[str]: ...
    def metric(self, service: str, metric: str) -> list[Point] | None: ...


class FileTelemetry:
    def __init__(self, log_roots: list[Path], metric_roots: list[Path]) -> None:
        self._log_files: dict[str, Path] = {}
        for root in log_roots:
            for path in sorted(root.rglob("*.jsonl")):
                self._log_files[path.stem] = path
            for path in sorted(root.rglob("*_structured.csv")):
                self._log_files[path.name.split("_")[0].lower()] = path
        self._metric_files: dict[tuple[str, str], Path] = {}
        for root in metric_roots:
            for path in sorted(root.rglob("*.csv")):
                self._metric_files[(path.parent.name, path.stem)] = path
        self._log_cache: dict[str, list[LogLine]] = {}

    @classmethod
    def bundled(cls, root: Path) -> FileTelemetry:
        return cls([root / "logs"], [root / "metrics"])

    def services(self) -> list[str]:
        return sorted(set(self._log_files) | {s for s, _ in self._metric_files})

    def logs(self, service: str) -> list[LogLine] | None:
        path = self._log_files.get(service)
        if path is None:
            return None
        if service not in self._log_cache:
            self._log_cache[service] = _read_logs(path)
        return self._log_cache[service]

    def metric_names(self, service: str) -> list[str]:
        return sorted(m for s, m in self._metric_files if s == service)

    def metric(self, service: str, metric: str) -> list[Point] | None:
        path = self._metric_files.get((service, metric))
        if path is None:
            return None
        with path.open(encoding="utf-8") as fh:
            return [Point(row["timestamp"], float(row["value"])) for row in csv.DictReader(fh)]


def _read_logs(path: Path) -> list[LogLine]:
    if path.suffix == ".jsonl":
        lines = []
        with path.open(encoding="utf-8") as fh:
            for raw in fh:
                if raw.strip():
                    d = json.loads(raw)
                    lines.append(LogLine(str(d.get("ts", "")), str(d.get("level", "")), str(d.get("message", ""))))
        return lines
    with path.open(encoding="utf-8", errors="replace") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for row in rows:
        ts = " ".join(row[k] for k in ("Date", "Day", "Time") if row.get(k))
        out.append(LogLine(ts, row.get("Level", ""), row.get("Content", "")))
    return out


class QueryLogsTool:
    name = "query_logs"
    description = (
        "Search a service's logs. Returns matching lines (all keywords must occur, case-insensitive), "
        "newest last, and the total number of matches."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "service": {"type": "string", "description": "service name, e.g. payment-service"},
            "query": {"type": "string", "description": "space-separated keywords; empty for all lines"},
            "level": {"type": "string", "description": "only this level, e.g. ERROR"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        "required": ["service"],
        "additionalProperties": False,
    }

    def __init__(self, backend: TelemetryBackend) -> None:
        self.backend = backend

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        service = str(args.get("service", "")).strip()
        lines = self.backend.logs(service)
        if lines is None:
            return ToolResult(
                "no_data",
                {"error": f"no logs for service {service!r}", "services": self.backend.services()},
                preview=f"no logs {service}",
            )
        terms = [t.lower() for t in str(args.get("query", "")).split() if t]
        level = str(args.get("level", "")).upper()
        limit = max(1, min(int(args.get("limit", 20) or 20), 50))
        hits = [
            ln
            for ln in lines
            if all(t in ln.message.lower() for t in terms) and (not level or ln.level.upper() == level)
        ]
        if not hits:
            return ToolResult(
                "no_data", {"service": service, "total_matches": 0, "matches": []}, preview=f"{service}: 0 matches"
            )
        shown = hits[-limit:]
        output = {
            "service": service,
            "total_matches": len(hits),
            "matches": [{"ts": h.ts, "level": h.level, "message": h.message} for h in shown],
        }
        return ToolResult("success", output, preview=f"{service}: {len(hits)} matches")


class QueryMetricsTool:
    name = "query_metrics"
    description = (
        "Summarise a metric series of a service: min, max, mean, p95, last value, and the peak's time. "
        "Without 'metric', lists the service's metrics."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "service": {"type": "string"},
            "metric": {"type": "string", "description": "metric name from the service's list"},
        },
        "required": ["service"],
        "additionalProperties": False,
    }

    def __init__(self, backend: TelemetryBackend) -> None:
        self.backend = backend

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        service = str(args.get("service", "")).strip()
        metric = str(args.get("metric", "")).strip()
        names = self.backend.metric_names(service)
        if not metric:
            if not names:
                return ToolResult("no_data", {"error": f"no metrics for {service!r}"}, preview="no metrics")
            return ToolResult("success", {"service": service, "metrics": names}, preview=f"{len(names)} metrics")
        points = self.backend.metric(service, metric)
        if not points:
            return ToolResult(
                "no_data",
                {"error": f"no metric {metric!r} for {service!r}", "metrics": names},
                preview=f"no metric {metric}",
            )
        values = [p.value for p in points]
        peak = max(points, key=lambda p: p.value)
        ordered = sorted(values)
        summary = {
            "service": service,
            "metric": metric,
            "points": len(points),
            "from": points[0].ts,
            "to": points[-1].ts,
            "min": round(min(values), 4),
            "max": round(max(values), 4),
            "mean": round(statistics.fmean(values), 4),
            "p95": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 4),
            "last": round(values[-1], 4),
            "peak_at": peak.ts,
        }
        return ToolResult("success", summary, preview=f"{metric} max={summary['max']} last={summary['last']}")
