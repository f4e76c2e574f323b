"""Signals derived from logs and traces, as per-minute series the ranking scores like any metric.

A bucket counts only where the backend captured that modality at all (some service logged, some span
started): a replay that kept a few minutes around each fault has no data between them, which is not
a stretch of zero errors. Within a captured bucket a service without a line is a zero. The baseline is
the captured stretch that runs up to the window without a gap: with continuous capture that is the
whole baseline; where capture is patchy (a replay that kept the minutes around each fault) it is the
quiet time just before the window, not an earlier incident's minutes.

- ``log_errors``: error-level lines a service logged in the minute (ERROR, FATAL, CRITICAL, SEVERE).
- ``span_latency_p90``: p90 duration of the spans a service serves (a span whose parent is in another
  service, or a trace's first span), in seconds: its own view of how slow it answers.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from telemetry.backends.common import make_series
from telemetry.model import LogRecord, Series, Span, TelemetryBackend, with_callers

BUCKET_S = 20.0
ERROR_LEVELS = frozenset({"ERROR", "FATAL", "CRITICAL", "SEVERE", "ALERT", "EMERG", "EMERGENCY"})
MODALITIES = ("metrics", "logs", "traces")


def bucket(ts: float) -> float:
    return ts - ts % BUCKET_S


def contiguous(buckets: list[float], window_start: float) -> list[float]:
    """The buckets of the window and those that lead up to it without a gap (ascending input)."""
    before = [b for b in buckets if b < window_start]
    keep = [b for b in buckets if b >= window_start]
    edge = bucket(window_start)
    for b in reversed(before):
        if edge - b > BUCKET_S:
            break
        keep.insert(0, b)
        edge = b
    return keep


def log_error_series(records: dict[str, list[LogRecord]], window_start: float) -> list[Series]:
    captured = contiguous(sorted({bucket(r.ts) for batch in records.values() for r in batch}), window_start)
    out = []
    for service, batch in records.items():
        errors: dict[float, int] = defaultdict(int)
        for r in batch:
            if r.level.upper() in ERROR_LEVELS:
                errors[bucket(r.ts)] += 1
        out.append(make_series(service, "log_errors", f"{service} logs", captured, [errors[b] for b in captured]))
    return out


def span_latency_series(spans: list[Span], window_start: float) -> list[Series]:
    captured = contiguous(sorted({bucket(s.start) for s in spans}), window_start)
    served: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s, parent in with_callers(spans):
        if parent != s.service:  # the span where a request enters the service
            served[s.service][bucket(s.start)].append(s.duration)
    out = []
    for service, minutes in served.items():
        # A captured minute in which the service served nothing has no latency (NaN), not zero.
        values = [float(np.percentile(minutes[b], 90)) if minutes.get(b) else float("nan") for b in captured]
        out.append(make_series(service, "span_latency_p90", f"{service} spans", captured, values))
    return out


@dataclass
class LogsAndSpans:
    """What a backend holds of a window beside its metrics: each service's log lines and every span."""

    records: dict[str, list[LogRecord]] = field(default_factory=dict)
    spans: list[Span] = field(default_factory=list)

    @property
    def lines(self) -> list[LogRecord]:
        return [r for batch in self.records.values() for r in batch]


async def logs_and_spans(
    backend: TelemetryBackend, start: float, end: float, modalities: tuple[str, ...] = MODALITIES
) -> LogsAndSpans:
    """The log lines and spans in ``[start, end]`` of the services the backend has metrics for (a
    log-only source, such as a Loghub file, is not a service of the system being ranked)."""
    out = LogsAndSpans()
    known = set(await backend.services())
    if "logs" in modalities:
        services = [svc for svc in await backend.log_services() if svc in known]
        batches = await asyncio.gather(*(backend.logs(svc, start, end) for svc in services))
        out.records = {svc: batch for svc, batch in zip(services, batches, strict=True) if batch}
    if "traces" in modalities:
        out.spans = [s for s in await backend.spans(start, end) or [] if s.service in known]
    return out


async def derived_series(data: LogsAndSpans, window_start: float) -> list[Series]:
    """The log and trace signals of ``data`` as per-bucket series."""
    out: list[Series] = []
    if data.records:
        out.extend(log_error_series(data.records, window_start))
    if data.spans:
        out.extend(await asyncio.to_thread(span_latency_series, data.spans, window_start))
    return out
