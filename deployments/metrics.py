"""Prometheus metrics of raydiag itself, through Ray's per-node metrics.

Each replica records into ``ray.util.metrics`` (Counters, Histograms, Gauges); Ray's per-node metrics
agent (it runs with the dashboard off too) gathers every worker's series on that node and exposes them
on the node's metrics export port, as ``ray_raydiag_*`` with per-worker labels. ``GET /metrics`` on the
service's port serves that node-level view for single-machine users, renamed to ``raydiag_*`` and
summed over the node's workers, so a scrape gets the same counters whichever ingress replica the proxy
routes it to. On a cluster, scrape every node's metrics export port instead (Ray writes the targets
to ``/tmp/ray/prom_metrics_service_discovery.json`` on the head), next to Ray Serve's ``ray_serve_*`` and
vLLM's ``ray_vllm_*`` series.

The series come from the audit records the pipeline emits (``MetricsSink`` passes every record on and
counts it), so they agree with the audit trail: no high-cardinality labels (no run, session or tenant).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any

import httpx
from fastapi.responses import PlainTextResponse

from audit.records import AuditRecord

log = logging.getLogger(__name__)

SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]
# Labels Ray adds per worker and per session: dropped (and the values summed) in the node-level view.
WORKER_LABELS = {"Component", "NodeAddress", "SessionName", "Version", "WorkerId", "JobId", "ActorId"}
RAY_PREFIX = "ray_raydiag_"


class ServiceMetrics:
    """The service's series, recorded through ``ray.util.metrics`` (one instance per replica)."""

    def __init__(self) -> None:
        from ray.util.metrics import Counter, Gauge, Histogram

        self.runs = Counter(
            "raydiag_runs_total",
            description="Runs finished, by outcome and released content type.",
            tag_keys=("outcome", "content_type", "flow"),
        )
        self.run_seconds = Histogram(
            "raydiag_run_duration_seconds", description="Run duration.", boundaries=SECONDS, tag_keys=("flow",)
        )
        self.stage_seconds = Histogram(
            "raydiag_stage_duration_seconds",
            description="Time spent per stage (timeline phase) of a run.",
            boundaries=SECONDS,
            tag_keys=("stage",),
        )
        self.model_calls = Counter(
            "raydiag_model_calls_total", description="Model calls by component.", tag_keys=("component",)
        )
        self.model_tokens = Counter(
            "raydiag_model_tokens_total",
            description="Model tokens by component and direction (input, output).",
            tag_keys=("component", "direction"),
        )
        self.tool_calls = Counter(
            "raydiag_tool_calls_total", description="Tool calls by tool and status.", tag_keys=("tool", "status")
        )
        self.retrieval_seconds = Histogram(
            "raydiag_retrieval_duration_seconds", description="lookup_knowledge duration.", boundaries=SECONDS
        )
        self.admission_rejections = Counter(
            "raydiag_admission_rejections_total",
            description="Requests refused by admission (429), by which limit.",
            tag_keys=("limit",),
        )
        self.audit_pending = Gauge(
            "raydiag_audit_pending_records", description="Audit records waiting in the ingress buffers."
        )
        self.audit_spilled = Gauge(
            "raydiag_audit_spilled_records", description="Audit records the writer spilled to disk since it started."
        )
        self.audit_dead_lettered = Gauge(
            "raydiag_audit_dead_lettered_records", description="Audit records in the writer's dead-letter file."
        )


class MetricsSink:
    """An ``AuditSink`` that passes every record on and counts it into ``ServiceMetrics``."""

    def __init__(self, inner: Any, metrics: ServiceMetrics, pending: Callable[[], int] = lambda: 0) -> None:
        self.inner = inner
        self.m = metrics
        self.pending = pending  # the ingress buffer's depth, sampled as each run finishes
        self._timelines: OrderedDict[str, list[tuple[float, str]]] = OrderedDict()
        self._flows: dict[str, str] = {}

    def emit(self, record: AuditRecord) -> None:
        self.inner.emit(record)
        try:
            self._count(record)
        except Exception as err:  # metrics are an observer: never a cost to the run or its audit
            log.warning("metrics of record %s not counted: %s", record.kind, err)

    def _count(self, r: AuditRecord) -> None:
        d = r.data
        if r.kind == "run_started":
            self._flows[r.run_id] = str(d.get("agent_flow", "CHAT"))
        elif r.kind == "trace_event":
            self._timelines.setdefault(r.run_id, []).append((r.ts, str(d.get("phase", ""))))
            if d.get("event_type") == "MODEL_TOKEN_USAGE":
                u = d.get("details") or {}
                component = str(u.get("component", ""))
                self.m.model_calls.inc(1, tags={"component": component})
                for direction in ("input", "output"):
                    tokens = int(u.get(f"{direction}_tokens") or 0)
                    if tokens:
                        self.m.model_tokens.inc(tokens, tags={"component": component, "direction": direction})
        elif r.kind == "tool_invocation":
            tool = str(d.get("tool_name", ""))
            self.m.tool_calls.inc(1, tags={"tool": tool, "status": str(d.get("status") or "")})
            if tool == "lookup_knowledge" and d.get("duration_ms") is not None:
                self.m.retrieval_seconds.observe(float(d["duration_ms"]) / 1000)
        elif r.kind == "run_finished":
            flow = self._flows.pop(r.run_id, "CHAT")
            tags = {
                "outcome": str(d.get("release_outcome") or d.get("status") or ""),
                "content_type": str(d.get("content_type") or ""),
                "flow": flow,
            }
            self.m.runs.inc(1, tags=tags)
            self.m.audit_pending.set(self.pending())
            if d.get("total_duration_ms") is not None:
                self.m.run_seconds.observe(float(d["total_duration_ms"]) / 1000, tags={"flow": flow})
            for stage, seconds in stage_split(self._timelines.pop(r.run_id, [])).items():
                self.m.stage_seconds.observe(seconds, tags={"stage": stage})
        while len(self._timelines) > 1000:  # runs that never finished
            self._timelines.popitem(last=False)


def stage_split(timeline: list[tuple[float, str]]) -> dict[str, float]:
    """Seconds per phase: each gap between consecutive timeline events goes to the later one's phase."""
    out: dict[str, float] = defaultdict(float)
    for (t0, _), (t1, phase) in itertools.pairwise(timeline):
        out[phase] += max(0.0, t1 - t0)
    return dict(out)


def node_view(text: str) -> str:
    """The raydiag series of a node's Prometheus text, named ``raydiag_*`` and summed over workers."""
    from prometheus_client.parser import text_string_to_metric_families

    # Only raydiag's lines are parsed: a busy node exports thousands of Ray, Serve and vLLM series.
    ours = "\n".join(
        line
        for line in text.splitlines()
        if line.startswith((RAY_PREFIX, f"# HELP {RAY_PREFIX}", f"# TYPE {RAY_PREFIX}"))
    )
    lines: list[str] = []
    for family in text_string_to_metric_families(ours + "\n"):
        if not family.name.startswith(RAY_PREFIX):
            continue
        name = family.name[len("ray_") :]
        sums: dict[tuple[str, tuple[tuple[str, str], ...]], float] = defaultdict(float)
        for s in family.samples:
            labels = tuple(
                sorted((k, v) for k, v in s.labels.items() if k not in WORKER_LABELS and not k.startswith("otel_"))
            )
            sums[(s.name[len("ray_") :], labels)] += s.value
        typed = f"{name}_total" if family.type == "counter" else name  # the counter's samples end in _total
        lines.append(f"# HELP {typed} {family.documentation}")
        lines.append(f"# TYPE {typed} {family.type}")
        for (sample, labels), value in sums.items():
            rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
            lines.append(f"{sample}{{{rendered}}} {value}" if rendered else f"{sample} {value}")
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


@functools.cache
def node_metrics_url() -> str | None:
    """This node's Ray metrics export endpoint, on loopback (None outside a Ray worker). Asked of the
    GCS once per process: a replica does not change nodes."""
    import ray

    if not ray.is_initialized():
        return None
    node_id = ray.get_runtime_context().get_node_id()
    for node in ray.nodes():
        if node.get("NodeID") == node_id and node.get("MetricsExportPort"):
            return f"http://127.0.0.1:{node['MetricsExportPort']}/metrics"
    return None


def add_metrics_route(app: Any) -> None:
    """``GET /metrics``: this node's raydiag series (open, like /healthz)."""

    @app.get("/metrics", summary="Prometheus metrics: this node's raydiag series (text format 0.0.4)")
    async def metrics() -> PlainTextResponse:
        url = await asyncio.to_thread(node_metrics_url)
        if url is None:
            return PlainTextResponse("# no Ray metrics agent on this node\n", status_code=503)
        async with httpx.AsyncClient(timeout=5, trust_env=False) as client:
            reply = await client.get(url)
        return PlainTextResponse(node_view(reply.text), media_type="text/plain; version=0.0.4; charset=utf-8")
