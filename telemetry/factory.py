"""From settings to a backend, built once per distinct settings and reused."""

from __future__ import annotations

import threading
from pathlib import Path

from telemetry.backends.files import FileTelemetry
from telemetry.backends.jaeger import JaegerTelemetry
from telemetry.backends.nezha import NezhaTelemetry
from telemetry.backends.prometheus import PrometheusTelemetry
from telemetry.clock import parse_instant
from telemetry.combined import CompositeTelemetry
from telemetry.model import TelemetryBackend
from telemetry.settings import TelemetrySettings


def build_backend(settings: TelemetrySettings) -> TelemetryBackend:
    logs_only = settings.backend == "prometheus"
    parts: list[TelemetryBackend] = []
    if settings.backend == "prometheus":
        parts.append(PrometheusTelemetry(settings.prometheus))
    parts.append(
        FileTelemetry(
            [Path(p) for p in settings.log_roots],
            [] if logs_only else [Path(p) for p in settings.metric_roots],
            settings.yearless_year,
        )
    )
    if not logs_only:
        parts += [NezhaTelemetry(Path(day)) for day in settings.nezha_days]
    if settings.jaeger.url:
        parts.append(JaegerTelemetry(settings.jaeger))
    return parts[0] if len(parts) == 1 else CompositeTelemetry(parts, name=settings.backend)


def pinned_clock(settings: TelemetrySettings) -> float | None:
    """The configured clock as epoch seconds, or None for the wall clock."""
    return parse_instant(settings.clock, 0.0) if settings.clock else None


class BackendCache:
    """Backends by their settings: a run that names the same telemetry reuses the loaded one."""

    def __init__(self) -> None:
        self._backends: dict[str, TelemetryBackend] = {}
        self._lock = threading.Lock()

    def get(self, settings: TelemetrySettings) -> TelemetryBackend:
        key = settings.model_dump_json(exclude={"modalities"})  # what the tools score, not what is read
        with self._lock:
            if key not in self._backends:
                self._backends[key] = build_backend(settings)
            return self._backends[key]
