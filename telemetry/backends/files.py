"""The ``file`` backend's plain sources: the bundled demo, Loghub structured logs, NAB series.

- Demo (``knowledge/telemetry``): ``logs/<service>.jsonl`` ({"ts", "level", "message"} per line) and
  ``metrics/<service>/<metric>.csv`` (``timestamp,value``); the metric's file name is its signal.
- Loghub (``<System>_2k.log_structured.csv``): service = the system in lower case. Each system writes
  its time differently (``LOGHUB_TIME``). Linux and OpenSSH lines carry no year: they take
  ``yearless_year`` (default: the current UTC year, a date that would lie in the future going back one
  year, as syslog readers do), so a window selects them by that year's dates.
- NAB (``data/<group>/<series>.csv``, ``timestamp,value``): service = the group, signal = the series.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from telemetry.backends.common import Lazy, make_series, number, series_in
from telemetry.model import Edge, Inventory, LogRecord, Series, Span


def _parse(text: str, *formats: str) -> float:
    for fmt in formats:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return float("nan")


def _iso(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return _parse(text, "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S")


def _yearless(month_day_time: str, year: int) -> float:
    t = _parse(f"{year} {month_day_time}", "%Y %b %d %H:%M:%S")
    if t == t and t > time.time() + 86400:
        t = _parse(f"{year - 1} {month_day_time}", "%Y %b %d %H:%M:%S")
    return t


# System -> (row -> epoch seconds); ``y`` is the year for systems whose lines have none.
LOGHUB_TIME: dict[str, Callable[[dict[str, str], int], float]] = {
    "apache": lambda r, y: _parse(r["Time"], "%a %b %d %H:%M:%S %Y"),
    "bgl": lambda r, y: number(r["Timestamp"]),
    "thunderbird": lambda r, y: number(r["Timestamp"]),
    "hdfs": lambda r, y: _parse(f"{r['Date']} {r['Time']}", "%y%m%d %H%M%S"),
    "hadoop": lambda r, y: _parse(f"{r['Date']} {r['Time'].split(',')[0]}", "%Y-%m-%d %H:%M:%S"),
    "zookeeper": lambda r, y: _parse(f"{r['Date']} {r['Time'].split(',')[0]}", "%Y-%m-%d %H:%M:%S"),
    "openstack": lambda r, y: _parse(f"{r['Date']} {r['Time'].split('.')[0]}", "%Y-%m-%d %H:%M:%S"),
    "spark": lambda r, y: _parse(f"{r['Date']} {r['Time']}", "%y/%m/%d %H:%M:%S"),
    "linux": lambda r, y: _yearless(f"{r['Month']} {r['Date']} {r['Time']}", y),
    "openssh": lambda r, y: _yearless(f"{r['Date']} {r['Day']} {r['Time']}", y),
}


def _read_jsonl(path: Path, service: str) -> list[LogRecord]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for raw in fh:
            if raw.strip():
                d = json.loads(raw)
                out.append(
                    LogRecord(
                        _iso(str(d.get("ts", ""))),
                        service,
                        service,
                        str(d.get("level", "")).upper(),
                        str(d.get("message", "")),
                    )
                )
    return out


def _read_loghub(path: Path, service: str, year: int) -> list[LogRecord]:
    when = LOGHUB_TIME.get(service)
    out = []
    with path.open(encoding="utf-8", errors="replace", newline="") as fh:
        for row in csv.DictReader(fh):
            ts = when(row, year) if when else float("nan")
            out.append(LogRecord(ts, service, service, str(row.get("Level") or "").upper(), row.get("Content", "")))
    return out


def _read_metric_csv(path: Path, service: str) -> Series:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return make_series(
        service, path.stem, service, [_iso(r["timestamp"]) for r in rows], [number(r["value"]) for r in rows]
    )


class FileTelemetry:
    """Demo, Loghub and NAB files under the configured log and metric roots."""

    name = "file"

    def __init__(self, log_roots: list[Path], metric_roots: list[Path], yearless_year: int | None = None) -> None:
        self.year = yearless_year or datetime.now(UTC).year
        self._log_files: dict[str, tuple[Path, str]] = {}
        for root in log_roots:
            for path in sorted(Path(root).rglob("*.jsonl")):
                self._log_files[path.stem] = (path, "jsonl")
            for path in sorted(Path(root).rglob("*_structured.csv")):
                self._log_files[path.name.split("_")[0].lower()] = (path, "loghub")
        self._metric_files: dict[tuple[str, str], Path] = {}
        for root in metric_roots:
            for path in sorted(Path(root).rglob("*.csv")):
                self._metric_files[(path.parent.name, path.stem)] = path
        self._series = Lazy(lambda: [_read_metric_csv(p, s) for (s, _), p in self._metric_files.items()])
        self._log_cache: dict[str, Lazy[list[LogRecord]]] = {}

    def _log_loader(self, service: str) -> Lazy[list[LogRecord]]:
        if service not in self._log_cache:
            path, kind = self._log_files[service]
            load = (
                (lambda: _read_jsonl(path, service))
                if kind == "jsonl"
                else (lambda: _read_loghub(path, service, self.year))
            )
            self._log_cache[service] = Lazy(load)
        return self._log_cache[service]

    async def services(self) -> list[str]:
        return sorted(set(self._log_files) | {s for s, _ in self._metric_files})

    async def signals(self, service: str) -> list[str]:
        return sorted(m for s, m in self._metric_files if s == service)

    async def series(self, signal: str, start: float, end: float, service: str | None = None) -> list[Series]:
        return series_in(await self._series.get(), signal, start, end, service)

    async def logs(self, service: str, start: float, end: float) -> list[LogRecord] | None:
        if service not in self._log_files:
            return None
        return [r for r in await self._log_loader(service).get() if start <= r.ts <= end]

    async def spans(self, start: float, end: float) -> list[Span] | None:
        return None

    async def log_services(self) -> list[str]:
        return sorted(self._log_files)

    async def edges(self) -> list[Edge]:
        return []

    async def inventory(self) -> Inventory:
        series = await self._series.get()
        times = [float(t) for s in series for t in (s.ts[:1].tolist() + s.ts[-1:].tolist())]
        for service in self._log_files:
            stamps = [r.ts for r in await self._log_loader(service).get() if r.ts == r.ts]
            times += [min(stamps), max(stamps)] if stamps else []
        services = await self.services()
        return Inventory(
            self.name,
            services,
            {s: await self.signals(s) for s in services},
            await self.log_services(),
            0,
            min(times, default=None),
            max(times, default=None),
            [f"Linux/OpenSSH log lines carry no year: read as {self.year}"],
        )
