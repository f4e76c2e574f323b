"""One day of the Nezha RCA dataset (FSE 2023; OnlineBoutique or TrainTicket) as a telemetry backend.

Layout of a day folder (``rca_data/<day>/``):
- ``metric/<pod>_metric.csv``: 1-minute rows per pod. Column → signal: ``CpuUsage(m)`` / 1000 → cpu
  (cores); ``MemoryUsage(Mi)`` → memory (bytes); ``PodServerLatencyP90/P99(s)`` → latency_p90/p99
  (the requests the pod serves); ``PodClientLatencyP90/P99(s)`` → client_latency_p90/p99 (the calls
  it makes); 100 − ``PodSuccessRate(%)`` → error_rate; ``PodWorkload(Ops)`` → throughput;
  ``NetworkReceiveBytes`` / ``NetworkTransmitBytes`` → net_rx / net_tx.
- ``metric/source_50.csv``: per ``caller_callee`` column, the median call latency measured at the
  caller → call_latency of the callee (instance ``caller->callee``).
- ``metric/dependency.csv``: the call graph (``Source,Target``); IP-address nodes and
  ``loadgenerator`` have no metrics and are left out.
- ``log/<HH>_<MM>_log.csv``: container log lines (``Log`` is the runtime's JSON line, whose ``log``
  field may itself be the application's JSON with ``message`` and ``severity``).
Time: the ``Time`` column (UTC) is the clock; ``TimeStamp`` is used only where ``Time`` cannot be read
(one pod of 2022-08-22 has every ``TimeStamp`` 200,000,000 s off its ``Time``).
The fault lists and root-cause labels beside the data are ground truth: this backend never opens them.
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from telemetry.backends.common import Lazy, make_series, number, series_in, utc_seconds
from telemetry.model import Edge, Inventory, LogRecord, Series, service_of

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


def row_time(row: dict[str, str], time_key: str = "Time", stamp_key: str = "TimeStamp") -> float:
    """The row's instant: the ``Time`` column (``2022-08-22 03:51:19.73 +0000 UTC m=+0.24``)."""
    text = row.get(time_key) or ""
    try:
        return utc_seconds(text[:19])
    except ValueError:
        return number(row.get(stamp_key))


def is_nezha_day(path: Path) -> bool:
    return (path / "metric").is_dir() and any((path / "metric").glob("*_metric.csv"))


@dataclass
class _Day:
    series: list[Series]
    edges: list[Edge]
    services: list[str]


def _read_metrics(day: Path) -> _Day:
    store: list[Series] = []
    services: set[str] = set()
    for path in sorted((day / "metric").glob("*_metric.csv")):
        pod = path.name[: -len("_metric.csv")]
        service = service_of(pod)
        services.add(service)
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
        ts = [row_time(r) for r in rows]
        for signal, (column, convert) in COLUMNS.items():
            if rows and column in rows[0]:
                store.append(make_series(service, signal, pod, ts, [convert(number(r[column])) for r in rows]))
    edges: list[Edge] = []
    dep = day / "metric" / "dependency.csv"
    if dep.exists():
        with dep.open(encoding="utf-8", newline="") as fh:
            for r in csv.DictReader(fh):
                a, b = service_of(r.get("Source", "")), service_of(r.get("Target", ""))
                if a in services and b in services and Edge(a, b) not in edges:
                    edges.append(Edge(a, b))
    calls = day / "metric" / "source_50.csv"
    if calls.exists():
        with calls.open(encoding="utf-8", newline="") as fh:
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
    return _Day(store, edges, sorted(services))


def _message(raw: str) -> tuple[str, str]:
    """(level, message) from the container runtime's JSON line."""
    try:
        outer = json.loads(raw)
        inner_text = str(outer.get("log", "")).strip()
    except (ValueError, AttributeError):
        inner_text = raw.strip()
    level, message = "", inner_text
    if inner_text.startswith("{"):
        try:
            inner = json.loads(inner_text)
            message = str(inner.get("message", inner_text))
            level = str(inner.get("severity") or inner.get("level") or "")
        except ValueError:
            pass
    return level.upper(), _TRACE_PREFIX.sub("", message).strip()


def _read_logs(day: Path) -> dict[str, list[LogRecord]]:
    out: dict[str, list[LogRecord]] = {}
    for path in sorted((day / "log").glob("*_log.csv")) if (day / "log").is_dir() else []:
        with path.open(encoding="utf-8", newline="") as fh:
            for r in csv.DictReader(fh):
                pod = r.get("PodName", "")
                ts = number(r.get("TimeUnixNano")) / 1e9
                if ts != ts:  # NaN: fall back to the ISO column
                    ts = utc_seconds(r.get("Timestamp", "")[:19], "%Y-%m-%dT%H:%M:%S")
                level, message = _message(r.get("Log", ""))
                service = service_of(pod)
                out.setdefault(service, []).append(LogRecord(ts, service, pod, level, message))
    for records in out.values():
        records.sort(key=lambda rec: rec.ts)
    return out


class NezhaTelemetry:
    """See the module docstring; ``day`` is a ``rca_data/<day>`` folder."""

    name = "nezha"

    def __init__(self, day: Path) -> None:
        self.day = Path(day)
        if not is_nezha_day(self.day):
            raise FileNotFoundError(f"{self.day} has no metric/*_metric.csv: not a Nezha day folder")
        self._metrics = Lazy(lambda: _read_metrics(self.day))
        self._logs = Lazy(lambda: _read_logs(self.day))

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
        return list((await self._metrics.get()).edges)

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
