"""One day of the Nezha RCA dataset (FSE 2023; OnlineBoutique or TrainTicket) as a telemetry backend.

Layout of a day folder (``rca_data/<day>/``):
- ``metric/<pod>_metric.csv``: 1-minute rows per pod. Column → signal: ``CpuUsage(m)`` / 1000 → cpu
  (cores); ``MemoryUsage(Mi)`` → memory (bytes); ``PodServerLatencyP90/P99(s)`` → latency_p90/p99
  (the requests the pod serves); ``PodClientLatencyP90/P99(s)`` → client_latency_p90/p99 (the calls
  it makes); 100 − ``PodSuccessRate(%)`` → error_rate; ``PodWorkload(Ops)`` → throughput;
  ``NetworkReceiveBytes`` / ``NetworkTransmitBytes`` → net_rx / net_tx.
- ``metric/source_50.csv``: per ``caller_callee`` column, the median call latency measured at the
  caller → call_latency of the callee (instance ``caller->callee``).
- ``metric/destination_50.csv``: the same edges' median latency measured at the callee; the caller's
  minus the callee's → edge_gap of the edge (the time spent between them).
- ``metric/dependency.csv``: the call graph (``Source,Target``); IP-address nodes and
  ``loadgenerator`` have no metrics and are left out.
- ``log/<HH>_<MM>_log.csv``: container log lines (``Log`` is the runtime's JSON line, whose ``log``
  field may itself be the application's JSON with ``message`` and ``severity``, or a logback line
  ``HH:MM:SS.mmm LEVEL logger …`` as TrainTicket's Java services write).
- ``trace/<HH>_<MM>_trace.csv``: spans (``TraceID,SpanID,ParentID,PodName,OperationName,
  StartTimeUnixNano,EndTimeUnixNano,Duration``; ``ParentID`` ``root`` for a trace's first span). The
  call graph's edges are read from them too (a parent span's service calls its child's).
Every CSV may be gzip-compressed (``.csv.gz``) and is read in place.
Time: the ``Time`` column (UTC) is the clock; ``TimeStamp`` is used only where ``Time`` cannot be read
(one pod of 2022-08-22 has every ``TimeStamp`` 200,000,000 s off its ``Time``).
The fault lists and root-cause labels beside the data are ground truth: this backend never opens them.
"""

from __future__ import annotations

import bisect
import csv
import gzip
import io
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from telemetry.backends.common import Lazy, make_series, number, series_in, utc_seconds
from telemetry.model import Edge, Inventory, LogRecord, Series, Span, service_of, with_callers

log = logging.getLogger(__name__)

COLUMNS: dict[str, tuple[str, Callable[[float], float]]] = {
    "cpu": ("CpuUsage(m)", lambda v: v / 1000.0),
    "memory": ("MemoryUsage(Mi)", lambda v: v * 1048576.0),
    "latency_p90": ("PodServerLatencyP90(s)", lambda v: v),
    "latency_p99": ("PodServerLatencyP99(s)", lambda v: v),
    "client_latency_p90": ("PodClientLatencyP90(s)", lambda v: v),
    "client_latency_p99": ("PodClientLatencyP99(s)", lambda v: v),
    "error_rate": ("PodSuccessRate(%)", lambda v: 100.0 - v),
    "throughput": ("PodWorkload(Ops)", lambda v: v),
    "net_rx": ("NetworkReceiveBytes", lambda v: v),
    "net_tx": ("NetworkTransmitBytes", lambda v: v),
}
_TRACE_PREFIX = re.compile(r"^TraceID: \S+ SpanID: \S+ ")
# A logback line: time, level, then the logger (TrainTicket); the time is the container's local clock.
_LOGBACK = re.compile(r"^\d\d:\d\d:\d\d[.,]\d+\s+(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\s+")
_TRACE_IDS = re.compile(r"TraceID: \S+ SpanID: \S+ ")


def _open_csv(path: Path) -> io.TextIOBase:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path), encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


def _csv_files(folder: Path, suffix: str) -> list[Path]:
    """``*<suffix>`` and ``*<suffix>.gz`` in the folder, in name order."""
    if not folder.is_dir():
        return []
    return sorted([*folder.glob(f"*{suffix}"), *folder.glob(f"*{suffix}.gz")])


def row_time(row: dict[str, str], time_key: str = "Time", stamp_key: str = "TimeStamp") -> float:
    """The row's instant: the ``Time`` column (``2022-08-22 03:51:19.73 +0000 UTC m=+0.24``)."""
    text = row.get(time_key) or ""
    try:
        return utc_seconds(text[:19])
    except ValueError:
        return number(row.get(stamp_key))


def is_nezha_day(path: Path) -> bool:
    return bool(_csv_files(path / "metric", "_metric.csv"))


@dataclass
class _Day:
    series: list[Series]
    edges: list[Edge]
    services: list[str]


def _read_metrics(day: Path) -> _Day:
    store: list[Series] = []
    services: set[str] = set()
    for path in _csv_files(day / "metric", "_metric.csv"):
        pod = path.name[: path.name.index("_metric.csv")]
        service = service_of(pod)
        services.add(service)
        with _open_csv(path) as fh:
            rows = list(csv.DictReader(fh))
        ts = [row_time(r) for r in rows]
        for signal, (column, convert) in COLUMNS.items():
            if rows and column in rows[0]:
                store.append(make_series(service, signal, pod, ts, [convert(number(r[column])) for r in rows]))
    edges: list[Edge] = []
    for dep in _csv_files(day / "metric", "dependency.csv")[:1]:
        with _open_csv(dep) as fh:
            for r in csv.DictReader(fh):
                a, b = service_of(r.get("Source", "")), service_of(r.get("Target", ""))
                if a in services and b in services and Edge(a, b) not in edges:
                    edges.append(Edge(a, b))
    for calls in _csv_files(day / "metric", "source_50.csv")[:1]:
        with _open_csv(calls) as fh:
            rows = list(csv.DictReader(fh))
        ts = [row_time(r, "time", "timestamp") for r in rows]
        for column in rows[0] if rows else []:
            if column in ("time", "timestamp") or "_" not in column:
                continue
            caller, callee = column.split("_", 1)
            if callee in services:
                store.append(
                    make_series(callee, "call_latency", f"{caller}->{callee}", ts, [number(r[column]) for r in rows])
                )
                if caller in services and Edge(caller, callee) not in edges:
                    edges.append(Edge(caller, callee))
        store.extend(_edge_gaps(day, rows, ts, services))
    return _Day(store, edges, sorted(services))


def _edge_gaps(day: Path, source_rows: list[dict[str, str]], ts: list[float], services: set[str]) -> list[Series]:
    """edge_gap per ``caller->callee``: the median latency the caller sees (``source_50.csv``) minus the
    one the callee sees (``destination_50.csv``), minute by minute (``telemetry/analysis/edge_delay.py``)."""
    found = _csv_files(day / "metric", "destination_50.csv")[:1]
    if not found:
        return []
    with _open_csv(found[0]) as fh:
        dest = {int(row_time(r, "time", "timestamp") // 60): r for r in csv.DictReader(fh)}
    out = []
    for column in source_rows[0] if source_rows else []:
        if column in ("time", "timestamp") or "_" not in column:
            continue
        caller, callee = column.split("_", 1)
        if caller not in services or callee not in services:
            continue
        values = []
        for t, row in zip(ts, source_rows, strict=True):
            there = dest.get(int(t // 60))
            values.append(number(row[column]) - number(there.get(column) if there else None))
        out.append(make_series(callee, "edge_gap", f"{caller}->{callee}", ts, values))
    return out


def _message(raw: str) -> tuple[str, str]:
    """(level, message) from the container runtime's JSON line."""
    try:
        outer = json.loads(raw)
        inner_text = str(outer.get("log", "")).strip()
    except (ValueError, AttributeError):
        inner_text = raw.strip()
    level, message = "", inner_text
    logback = _LOGBACK.match(inner_text)
    if logback:
        level, message = logback.group(1), _TRACE_IDS.sub("", inner_text[logback.end() :])
    elif inner_text.startswith("{"):
        try:
            inner = json.loads(inner_text)
            message = str(inner.get("message", inner_text))
            level = str(inner.get("severity") or inner.get("level") or "")
        except ValueError:
            pass
    return level.upper(), _TRACE_PREFIX.sub("", message).strip()


def _read_logs(day: Path) -> dict[str, list[LogRecord]]:
    out: dict[str, list[LogRecord]] = {}
    for path in _csv_files(day / "log", "_log.csv"):
        with _open_csv(path) as fh:
            for r in csv.DictReader(fh):
                pod = r.get("PodName", "")
                ts = number(r.get("TimeUnixNano")) / 1e9
                if ts != ts:  # NaN: fall back to the ISO column
                    ts = utc_seconds(r.get("Timestamp", "")[:19], "%Y-%m-%dT%H:%M:%S")
                level, message = _message(r.get("Log", ""))
                service = service_of(pod)
                out.setdefault(service, []).append(LogRecord(ts, service, pod, level, message, r.get("SpanID") or ""))
    for records in out.values():
        records.sort(key=lambda rec: rec.ts)
    return out


def _read_spans(day: Path) -> list[Span]:
    spans: list[Span] = []
    for path in _csv_files(day / "trace", "_trace.csv"):
        with _open_csv(path) as fh:
            for r in csv.DictReader(fh):
                pod = r.get("PodName", "")
                parent = r.get("ParentID", "")
                spans.append(
                    Span(
                        number(r.get("StartTimeUnixNano")) / 1e9,
                        number(r.get("EndTimeUnixNano")) / 1e9,
                        service_of(pod),
                        pod,
                        r.get("OperationName", ""),
                        r.get("TraceID", ""),
                        r.get("SpanID", ""),
                        "" if parent == "root" else parent,
                    )
                )
    spans = [s for s in spans if s.start == s.start and s.end == s.end]  # drop rows without times (NaN)
    spans.sort(key=lambda s: s.start)
    return spans


def span_edges(spans: list[Span]) -> list[Edge]:
    """Caller → callee pairs: a span's service calls the service of each child span it has."""
    edges: dict[Edge, None] = {}
    for s, caller in with_callers(spans):
        if caller and caller != s.service:
            edges[Edge(caller, s.service)] = None
    return list(edges)


class NezhaTelemetry:
    """See the module docstring; ``day`` is a ``rca_data/<day>`` folder."""

    name = "nezha"

    def __init__(self, day: Path) -> None:
        self.day = Path(day)
        if not is_nezha_day(self.day):
            raise FileNotFoundError(f"{self.day} has no metric/*_metric.csv: not a Nezha day folder")
        self._metrics = Lazy(lambda: _read_metrics(self.day))
        self._logs = Lazy(lambda: _read_logs(self.day))
        self._has_traces = bool(_csv_files(self.day / "trace", "_trace.csv"))
        self._spans = Lazy(lambda: _read_spans(self.day))
        self._span_edges = Lazy(lambda: span_edges(self._spans.get_sync()))

    async def services(self) -> list[str]:
        return (await self._metrics.get()).services

    async def signals(self, service: str) -> list[str]:
        return sorted({s.signal for s in (await self._metrics.get()).series if s.service == service})

    async def series(self, signal: str, start: float, end: float, service: str | None = None) -> list[Series]:
        return series_in((await self._metrics.get()).series, signal, start, end, service)

    async def logs(self, service: str, start: float, end: float) -> list[LogRecord] | None:
        records = (await self._logs.get()).get(service)
        if records is None:
            return None
        return [r for r in records if start <= r.ts <= end]

    async def log_services(self) -> list[str]:
        return sorted(await self._logs.get())

    async def edges(self) -> list[Edge]:
        day = await self._metrics.get()
        services = set(day.services)
        traced = [e for e in await self._span_edges.get() if e.caller in services and e.callee in services]
        return list(dict.fromkeys([*day.edges, *traced]))

    async def spans(self, start: float, end: float) -> list[Span] | None:
        if not self._has_traces:
            return None
        spans = await self._spans.get()
        lo = bisect.bisect_left(spans, start, key=lambda s: s.start)
        hi = bisect.bisect_right(spans, end, key=lambda s: s.start)
        return [s for s in spans[lo:hi] if s.end <= end]

    async def inventory(self) -> Inventory:
        day = await self._metrics.get()
        logs = await self._logs.get()
        firsts = [float(s.ts[0]) for s in day.series if len(s.ts)]
        lasts = [float(s.ts[-1]) for s in day.series if len(s.ts)]
        return Inventory(
            self.name,
            day.services,
            {svc: sorted({s.signal for s in day.series if s.service == svc}) for svc in day.services},
            sorted(logs),
            len(day.edges),
            min(firsts, default=None),
            max(lasts, default=None),
            [f"day folder {self.day}"],
        )
