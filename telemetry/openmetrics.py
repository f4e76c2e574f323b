"""A Nezha day as OpenMetrics text with timestamps, for ``promtool tsdb create-blocks-from openmetrics``:
load public incident data into a real Prometheus (the test tier, the latency benchmark, a demo).

Where a faithful conversion exists the series get the names the default catalogue reads
(``telemetry/settings.py``): CPU millicores become the counter ``container_cpu_usage_seconds_total``
(cores × 60 s per minute, accumulated), memory ``container_memory_working_set_bytes``, network bytes/s
the counters ``container_network_{receive,transmit}_bytes_total``. The rest keeps Nezha's meaning under
``nezha_*`` names that a catalogue maps (``NEZHA_CATALOGUE``): pod server/client latency quantiles,
success rate, workload, and per-edge call latency with ``caller``/``callee`` labels.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path

from telemetry.backends.common import number
from telemetry.backends.nezha import row_time
from telemetry.settings import DEFAULT_CATALOGUE, PromEdges, PromSignal

_POD_RE = "({service})-[a-z0-9]+-[a-z0-9]+"
# Nezha column -> (family, type, scale); counters accumulate value × 60 s per 1-minute row.
_POD_FAMILIES: list[tuple[str, str, str, float]] = [
    ("CpuUsage(m)", "container_cpu_usage_seconds", "counter", 0.001),
    ("MemoryUsage(Mi)", "container_memory_working_set_bytes", "gauge", 1048576.0),
    ("NetworkReceiveBytes", "container_network_receive_bytes", "counter", 1.0),
    ("NetworkTransmitBytes", "container_network_transmit_bytes", "counter", 1.0),
    ("PodServerLatencyP90(s)", "nezha_pod_server_latency_p90_seconds", "gauge", 1.0),
    ("PodServerLatencyP99(s)", "nezha_pod_server_latency_p99_seconds", "gauge", 1.0),
    ("PodClientLatencyP90(s)", "nezha_pod_client_latency_p90_seconds", "gauge", 1.0),
    ("PodClientLatencyP99(s)", "nezha_pod_client_latency_p99_seconds", "gauge", 1.0),
    ("PodSuccessRate(%)", "nezha_pod_success_rate_percent", "gauge", 1.0),
    ("PodWorkload(Ops)", "nezha_pod_workload_ops", "gauge", 1.0),
]


def _pod_gauge(family: str, expr: str = "max") -> PromSignal:
    return PromSignal(query=f'{expr} by (pod) ({family}{{pod=~"{_POD_RE}"}})', instance_label="pod")


NEZHA_CATALOGUE: dict[str, PromSignal] = {
    **{k: DEFAULT_CATALOGUE[k] for k in ("cpu", "memory", "net_rx", "net_tx")},
    "latency_p90": _pod_gauge("nezha_pod_server_latency_p90_seconds"),
    "latency_p99": _pod_gauge("nezha_pod_server_latency_p99_seconds"),
    "client_latency_p90": _pod_gauge("nezha_pod_client_latency_p90_seconds"),
    "client_latency_p99": _pod_gauge("nezha_pod_client_latency_p99_seconds"),
    "error_rate": PromSignal(
        query=f'100 - max by (pod) (nezha_pod_success_rate_percent{{pod=~"{_POD_RE}"}})', instance_label="pod"
    ),
    "throughput": _pod_gauge("nezha_pod_workload_ops"),
    "call_latency": PromSignal(
        query='max by (caller, callee) (nezha_call_latency_p50_seconds{callee=~"{service}"})',
        instance_label="{caller}->{callee}",
        service_label="callee",
    ),
}
NEZHA_EDGES = PromEdges(match="nezha_call_latency_p50_seconds", caller_label="caller", callee_label="callee")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _fmt(v: float) -> str:
    return repr(float(v))


def nezha_openmetrics(day: Path) -> Iterator[str]:
    """Lines of one OpenMetrics exposition (families contiguous, samples in time order, ``# EOF`` last)."""
    pods = {p.name[: -len("_metric.csv")]: _rows(p) for p in sorted((day / "metric").glob("*_metric.csv"))}
    for column, family, kind, scale in _POD_FAMILIES:
        yield f"# TYPE {family} {kind}"
        sample = f"{family}_total" if kind == "counter" else family
        for pod, rows in pods.items():
            labels = f'{{namespace="default",pod="{pod}",container="server"}}'
            total = 0.0
            for r in rows:
                v = number(r.get(column)) * scale
                t = row_time(r)
                if kind == "counter":
                    total += 0.0 if math.isnan(v) else v * 60.0
                    yield f"{sample}{labels} {_fmt(total)} {int(t)}"
                elif not math.isnan(v):
                    yield f"{sample}{labels} {_fmt(v)} {int(t)}"
    calls = day / "metric" / "source_50.csv"
    if calls.exists():
        rows = _rows(calls)
        yield "# TYPE nezha_call_latency_p50_seconds gauge"
        for column in [c for c in (rows[0] if rows else {}) if c not in ("time", "timestamp") and "_" in c]:
            caller, callee = column.split("_", 1)
            for r in rows:
                v = number(r[column])
                if not math.isnan(v):
                    t = row_time(r, "time", "timestamp")
                    yield f'nezha_call_latency_p50_seconds{{caller="{caller}",callee="{callee}"}} {_fmt(v)} {int(t)}'
    yield "# EOF"


def write_nezha_openmetrics(day: Path, out: Path) -> int:
    n = 0
    with out.open("w", encoding="utf-8") as fh:
        for line in nezha_openmetrics(day):
            fh.write(line + "\n")
            n += 1
    return n
