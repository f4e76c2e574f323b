"""Spans and the call graph from a Jaeger query service over its HTTP API (``/api/services``,
``/api/traces``, ``/api/dependencies``: the JSON the Jaeger UI reads). Metrics and logs are not
Jaeger's: this backend has none, and sits beside one that has them (``factory.py``).

Times: Jaeger gives ``startTime`` and ``duration`` in microseconds. A span's parent is its
``CHILD_OF`` reference (else its first reference); its instance is the process's host or pod tag.
A trace comes back once per service it touches, so spans are kept once per (trace, span) id.
No Jaeger server installs on the development machine: the tests run against responses in Jaeger's
format served by a stand-in transport (``tests/telemetry/test_jaeger.py``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from telemetry.backends.http import LoopClients
from telemetry.model import BackendUnavailable, Edge, Inventory, LogRecord, Series, Span
from telemetry.settings import JaegerSettings

_INSTANCE_TAGS = ("k8s.pod.name", "host.name", "hostname")


class JaegerError(BackendUnavailable):
    """Jaeger answered with an error or could not be reached; the message says which call."""


def _parent(span: dict[str, Any]) -> str:
    refs = span.get("references") or []
    child_of = [r for r in refs if r.get("refType") == "CHILD_OF"]
    ref = (child_of or refs or [{}])[0]
    return str(ref.get("spanID") or "")


def _instance(process: dict[str, Any]) -> str:
    tags = {str(t.get("key")): t.get("value") for t in process.get("tags") or []}
    for key in _INSTANCE_TAGS:
        if tags.get(key):
            return str(tags[key])
    return str(process.get("serviceName") or "")


def spans_of_trace(trace: dict[str, Any]) -> list[Span]:
    """One ``/api/traces`` entry as spans."""
    processes = trace.get("processes") or {}
    out = []
    for s in trace.get("spans") or []:
        process = processes.get(s.get("processID"), {})
        start = float(s.get("startTime", 0)) / 1e6
        out.append(
            Span(
                start,
                start + float(s.get("duration", 0)) / 1e6,
                str(process.get("serviceName") or ""),
                _instance(process),
                str(s.get("operationName") or ""),
                str(s.get("traceID") or trace.get("traceID") or ""),
                str(s.get("spanID") or ""),
                _parent(s),
            )
        )
    return out


class JaegerTelemetry:
    name = "jaeger"

    def __init__(self, settings: JaegerSettings, transport: httpx.AsyncBaseTransport | None = None) -> None:
        if not settings.url:
            raise ValueError("telemetry.jaeger.url is not set")
        self.settings = settings
        self.url = settings.url.rstrip("/")
        self._clients = LoopClients(self.url, settings.timeout_s, transport)

    async def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        try:
            resp = await self._clients.get().get(path, params=params)
        except httpx.HTTPError as err:
            raise JaegerError(f"Jaeger at {self.url} unreachable: {type(err).__name__}") from err
        try:
            body = resp.json()
        except ValueError:
            raise JaegerError(f"Jaeger {path}: HTTP {resp.status_code}, not JSON") from None
        errors = body.get("errors") if isinstance(body, dict) else None
        if resp.status_code >= 400 or errors:
            detail = "; ".join(str(e.get("msg", e)) for e in errors or []) or f"HTTP {resp.status_code}"
            raise JaegerError(f"Jaeger {path}: {detail}")
        return body.get("data") if isinstance(body, dict) else None

    async def trace_services(self) -> list[str]:
        return sorted(str(s) for s in await self._get("/api/services") or [])

    async def services(self) -> list[str]:
        return []  # services with metrics: none here (the traced ones: trace_services)

    async def signals(self, service: str) -> list[str]:
        return []

    async def series(self, signal: str, start: float, end: float, service: str | None = None) -> list[Series]:
        return []

    async def logs(self, service: str, start: float, end: float) -> list[LogRecord] | None:
        return None

    async def log_services(self) -> list[str]:
        return []

    async def spans(self, start: float, end: float) -> list[Span] | None:
        services = await self.trace_services()
        params = {"start": int(start * 1e6), "end": int(end * 1e6), "limit": self.settings.traces_per_service}
        batches = await asyncio.gather(*(self._get("/api/traces", {**params, "service": s}) for s in services))
        seen: dict[tuple[str, str], Span] = {}
        for traces in batches:
            for trace in traces or []:
                for s in spans_of_trace(trace):
                    if start <= s.start and s.end <= end:
                        seen.setdefault((s.trace_id, s.span_id), s)
        return sorted(seen.values(), key=lambda s: s.start)

    async def edges(self) -> list[Edge]:
        now_ms = int(time.time() * 1000)
        params = {"endTs": now_ms, "lookback": int(self.settings.dependencies_lookback_s * 1000)}
        links = await self._get("/api/dependencies", params) or []
        return list(
            dict.fromkeys(
                Edge(str(d["parent"]), str(d["child"]))
                for d in links
                if d.get("parent") and d.get("child") and d["parent"] != d["child"]
            )
        )

    async def inventory(self) -> Inventory:
        services = await self.trace_services()
        return Inventory(
            self.name,
            [],
            {},
            [],
            len(await self.edges()),
            None,
            None,
            [f"Jaeger at {self.url}: traces of {len(services)} services"],
        )

    async def close(self) -> None:
        await self._clients.close()
