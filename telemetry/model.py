"""What every backend returns, and the protocol it implements.

Signals are logical names (``cpu``, ``latency_p90``, …: ``telemetry/signals.py``); a backend maps
its own columns or PromQL onto them. A series belongs to one service and one instance (a pod, or a
``caller->callee`` edge for ``call_latency``). Times are epoch seconds, UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

# Kubernetes pod names: <deployment>-<replicaset hash>-<pod suffix>.
_POD = re.compile(r"^(?P<service>.+)-[a-z0-9]{5,10}-[a-z0-9]{5}$")


def service_of(pod: str) -> str:
    """A pod's service: its name without the two hash suffixes (a name without them is its own service)."""
    m = _POD.match(pod)
    return m.group("service") if m else pod


class BackendUnavailable(RuntimeError):
    """A remote backend (Prometheus, Jaeger) answered with an error or could not be reached: a tool turns
    it into an error value naming the call, never a failed run."""


@dataclass
class Series:
    service: str
    signal: str
    instance: str
    ts: np.ndarray  # ascending epoch seconds
    values: np.ndarray  # NaN where the source had no sample

    def between(self, start: float, end: float) -> Series:
        keep = (self.ts >= start) & (self.ts <= end)
        return Series(self.service, self.signal, self.instance, self.ts[keep], self.values[keep])


@dataclass(frozen=True)
class LogRecord:
    ts: float
    service: str
    instance: str
    level: str
    message: str
    span_id: str = ""  # the span the line was written under, where the logger records it (trace context)


@dataclass(frozen=True, slots=True)
class Span:
    """One span of a distributed trace; ``parent_id`` is empty for a trace's first span."""

    start: float
    end: float
    service: str
    instance: str
    operation: str
    trace_id: str
    span_id: str
    parent_id: str

    @property
    def duration(self) -> float:
        return self.end - self.start


def with_callers(spans: list[Span]) -> list[tuple[Span, str | None]]:
    """Each span with the service of its parent span (None for a trace's first span, or a parent the
    list does not hold): where a parent's service differs, that service called this one."""
    service_of = {(s.trace_id, s.span_id): s.service for s in spans}
    return [(s, service_of.get((s.trace_id, s.parent_id)) if s.parent_id else None) for s in spans]


@dataclass(frozen=True)
class Edge:
    caller: str
    callee: str


@dataclass
class Inventory:
    """What a backend can answer about: ``raydiag telemetry check`` prints it."""

    backend: str
    services: list[str]
    signals: dict[str, list[str]]
    log_services: list[str]
    edges: int
    first: float | None
    last: float | None
    notes: list[str] = field(default_factory=list)


class TelemetryBackend(Protocol):
    """Metrics, logs and the call graph of one system. Every method answers for ``[start, end]``
    only; callers clamp ``end`` to the run's clock (``telemetry/clocked.py``)."""

    name: str

    async def services(self) -> list[str]: ...

    async def signals(self, service: str) -> list[str]: ...

    async def series(self, signal: str, start: float, end: float, service: str | None = None) -> list[Series]:
        """One series per instance; ``service=None`` answers for every service at once."""
        ...

    async def logs(self, service: str, start: float, end: float) -> list[LogRecord] | None:
        """The service's log lines in the window (ascending), or None when it has no logs at all."""
        ...

    async def log_services(self) -> list[str]: ...

    async def edges(self) -> list[Edge]: ...

    async def spans(self, start: float, end: float) -> list[Span] | None:
        """Every span that started and ended within the window (by start), or None when the backend
        has no traces at all."""
        ...

    async def inventory(self) -> Inventory: ...
