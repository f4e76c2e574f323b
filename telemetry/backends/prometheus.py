"""Metrics from a Prometheus server over its HTTP API (``/api/v1/query_range``, ``/api/v1/series``,
``/api/v1/label/<name>/values``), through a catalogue of PromQL per logical signal
(``telemetry/settings.py``). Logs are not Prometheus's: this backend has none."""

from __future__ import annotations

import math
import re
from typing import Any

import httpx
import numpy as np

from telemetry.backends.http import LoopClients
from telemetry.model import BackendUnavailable, Edge, Inventory, LogRecord, Series, Span, service_of
from telemetry.settings import PrometheusSettings, PromSignal


class PrometheusError(BackendUnavailable):
    """Prometheus answered with an error or could not be reached; the message says which query."""


def _instance(labels: dict[str, str], spec: str) -> str:
    if "{" in spec:
        return re.sub(r"\{(\w+)\}", lambda m: labels.get(m.group(1), ""), spec)
    return labels.get(spec, "")


class PrometheusTelemetry:
    name = "prometheus"

    def __init__(self, settings: PrometheusSettings) -> None:
        self.settings = settings
        self.url = settings.url.rstrip("/")
        self._clients = LoopClients(self.url, settings.timeout_s)

    async def _get(self, path: str, params: Any) -> Any:
        try:
            resp = await self._clients.get().get(path, params=params)
        except httpx.HTTPError as err:
            raise PrometheusError(f"Prometheus at {self.url} unreachable: {type(err).__name__}") from err
        try:
            body = resp.json()
        except ValueError:
            raise PrometheusError(f"Prometheus {path}: HTTP {resp.status_code}, not JSON") from None
        if body.get("status") != "success":
            raise PrometheusError(f"Prometheus {path}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    async def query_range(self, promql: str, start: float, end: float) -> list[dict[str, Any]]:
        step = self.settings.step_s
        # Evaluation instants counted back from the end, so the latest one is the window's end.
        begin = end - math.floor((end - start) / step) * step
        data = await self._get(
            "/api/v1/query_range", {"query": promql, "start": f"{begin:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        )
        return list(data.get("result", []))

    def _to_series(self, signal: str, spec: PromSignal, item: dict[str, Any]) -> Series:
        labels = item.get("metric", {})
        instance = _instance(labels, spec.instance_label)
        service = labels.get(spec.service_label, "") if spec.service_label else service_of(instance)
        values = item.get("values", [])
        ts = np.array([float(t) for t, _ in values], dtype=float)
        vals = np.array([float(v) if v not in ("NaN", "+Inf", "-Inf") else np.nan for _, v in values], dtype=float)
        return Series(service, signal, instance, ts, vals)

    async def series(self, signal: str, start: float, end: float, service: str | None = None) -> list[Series]:
        spec = self.settings.catalogue.get(signal)
        if spec is None:
            return []
        promql = spec.query.replace("{service}", re.escape(service) if service else ".+")
        items = await self.query_range(promql, start, end)
        out = [self._to_series(signal, spec, item) for item in items]
        return [s for s in out if s.service and (service is None or s.service == service)]

    async def services(self) -> list[str]:
        found: set[str] = set()
        for spec in self.settings.catalogue.values():
            label = spec.service_label or (spec.instance_label if "{" not in spec.instance_label else None)
            if label is None:
                continue
            values = await self._get(f"/api/v1/label/{label}/values", {})
            found.update(v if spec.service_label else service_of(v) for v in values)
        return sorted(found)

    async def signals(self, service: str) -> list[str]:
        return sorted(self.settings.catalogue)

    async def logs(self, service: str, start: float, end: float) -> list[LogRecord] | None:
        return None

    async def spans(self, start: float, end: float) -> list[Span] | None:
        return None

    async def log_services(self) -> list[str]:
        return []

    async def edges(self) -> list[Edge]:
        spec = self.settings.edges
        if spec is None:
            return []
        data = await self._get("/api/v1/series", {"match[]": spec.match})
        pairs = {(d.get(spec.caller_label, ""), d.get(spec.callee_label, "")) for d in data}
        return [Edge(service_of(a), service_of(b)) for a, b in sorted(pairs) if a and b]

    async def inventory(self) -> Inventory:
        services = await self.services()
        data = await self._get("/api/v1/query", {"query": "min(timestamp(up)) or vector(0)"})
        del data  # reachability check; Prometheus has no cheap "first sample" query
        return Inventory(
            self.name,
            services,
            {s: sorted(self.settings.catalogue) for s in services},
            [],
            len(await self.edges()),
            None,
            None,
            [f"Prometheus at {self.url}, step {self.settings.step_s:g}s, {len(self.settings.catalogue)} signals"],
        )

    async def close(self) -> None:
        await self._clients.close()
