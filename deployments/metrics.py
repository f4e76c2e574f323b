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
HTTP responses are counted by route and status (``RequestMetrics``); the gauges (runs admitted, working
and waiting; the audit writer's backlog; ``raydiag_build_info``) are set on a clock, so they are there
from start-up and between runs. vLLM's own engine series (time to first token, time per output token,
requests running and waiting, KV cache use) come from the engine's Ray stat logger (deployments/llm.py)
and are shown beside raydiag's as ``vllm_*``.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from collections import OrderedDict, defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from fastapi.responses import PlainTextResponse
from starlette.requests import ClientDisconnect

from audit.records import AuditRecord
from deployments.provenance import package_version

log = logging.getLogger(__name__)

SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]
# Labels Ray adds per worker and per session: dropped (and the values summed) in the node-level view.
WORKER_LABELS = {"Component", "NodeAddress", "SessionName", "Version", "WorkerId", "JobId", "ActorId"}


# attribute: (series name, help, label keys). The tables make the series (ServiceMetrics) and let the node
# view show each one before its first event (node_view): a counter nobody has incremented is 0, not absent.
COUNTERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "runs": (
        "raydiag_runs_total",
        "Runs finished, by outcome and released content type.",
        ("outcome", "content_type", "flow"),
    ),
    "run_errors": (
        "raydiag_run_errors_total",
        "Runs that ended in an error, by its code (MODEL_TIMEOUT, ENGINE_ERROR, ...).",
        ("code", "flow"),
    ),
    "model_calls": ("raydiag_model_calls_total", "Model calls by component.", ("component",)),
    "model_tokens": (
        "raydiag_model_tokens_total",
        "Model tokens by component and direction (input, output).",
        ("component", "direction"),
    ),
    "tool_calls": ("raydiag_tool_calls_total", "Tool calls by tool and status.", ("tool", "status")),
    "admission_rejections": (
        "raydiag_admission_rejections_total",
        "Requests refused by admission (429), by which limit.",
        ("limit",),
    ),
    "http_requests": (
        "raydiag_http_requests_total",
        "HTTP requests answered, by route and status code.",
        ("route", "status"),
    ),
}
HISTOGRAMS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "run_seconds": ("raydiag_run_duration_seconds", "Run duration.", ("flow",)),
    "stage_seconds": ("raydiag_stage_duration_seconds", "Time spent per stage (timeline phase) of a run.", ("stage",)),
    "retrieval_seconds": ("raydiag_retrieval_duration_seconds", "lookup_knowledge duration.", ()),
    "http_seconds": (
        "raydiag_http_request_duration_seconds",
        "Time to the end of the response (a chat: the whole stream), by route.",
        ("route",),
    ),
}
GAUGES = {
    "runs_admitted": "Runs admitted and not finished (their streams open), on this node's ingress replicas.",
    "runs_running": "Runs working now (inside ingress.max_active_runs).",
    "runs_waiting": "Runs admitted but waiting for a turn to work (their streams open).",
    "audit_pending_records": "Audit records waiting in the ingress buffers.",
    "audit_spilled_records": "Audit records the writer spilled to disk since it started.",
    "audit_dead_lettered_records": "Audit records in the writer's dead-letter file.",
}
BUILD = ("version", "model", "embedder")
GAUGE_PERIOD_S = 5.0
# The limits admission names (deployments/limits.py, deployments/admission.py): each shown from 0.
REJECTION_LIMITS = ("service", "tenant", "cluster_tenant")


class ServiceMetrics:
    """The service's series, recorded through ``ray.util.metrics`` (one instance per replica)."""

    def __init__(self) -> None:
        from ray.util.metrics import Counter, Gauge, Histogram

        def counter(attr: str) -> Any:
            name, text, tags = COUNTERS[attr]
            return Counter(name, description=text, tag_keys=tags)

        def histogram(attr: str) -> Any:
            name, text, tags = HISTOGRAMS[attr]
            return Histogram(name, description=text, boundaries=SECONDS, tag_keys=tags)

        self.runs, self.run_errors = counter("runs"), counter("run_errors")
        self.model_calls, self.model_tokens = counter("model_calls"), counter("model_tokens")
        self.tool_calls, self.admission_rejections = counter("tool_calls"), counter("admission_rejections")
        self.http_requests = counter("http_requests")
        self.run_seconds, self.stage_seconds = histogram("run_seconds"), histogram("stage_seconds")
        self.retrieval_seconds, self.http_seconds = histogram("retrieval_seconds"), histogram("http_seconds")
        self.build_info = Gauge(
            "raydiag_build_info", description="1, labelled with the version and the models served.", tag_keys=BUILD
        )
        # Set every GAUGE_PERIOD_S by keep_gauges (the ingress's clock), so they never vanish.
        self.gauges = {name: Gauge(f"raydiag_{name}", description=text) for name, text in GAUGES.items()}

    async def keep_gauges(
        self, values: Callable[[], Awaitable[dict[str, float]]], build: dict[str, str] | None = None
    ) -> None:
        """Set the gauges ``values`` gives now and every ``GAUGE_PERIOD_S`` after (the replica's life);
        ``build``: the labels of ``raydiag_build_info`` (the ingress sets it; the audit writer does not)."""
        while True:
            if build is not None:
                self.build_info.set(1, tags=build)
            try:
                for name, value in (await values()).items():
                    self.gauges[name].set(value)
            except Exception as err:  # an observer: a failed sample waits for the next one
                log.warning("gauges not sampled: %s", type(err).__name__)
            await asyncio.sleep(GAUGE_PERIOD_S)


def build_labels(cfg: Any) -> dict[str, str]:
    version = package_version()
    model = cfg.llm.model.rsplit("/", 1)[-1] if cfg.llm.backend in ("vllm", "openai") else cfg.llm.backend
    return {"version": version, "model": model, "embedder": cfg.search.embedder}


class MetricsSink:
    """An ``AuditSink`` that passes every record on and counts it into ``ServiceMetrics``."""

    def __init__(self, inner: Any, metrics: ServiceMetrics) -> None:
        self.inner = inner
        self.m = metrics
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
            if d.get("error_code"):
                self.m.run_errors.inc(1, tags={"code": str(d["error_code"]), "flow": flow})
            if d.get("total_duration_ms") is not None:
                self.m.run_seconds.observe(float(d["total_duration_ms"]) / 1000, tags={"flow": flow})
            for stage, seconds in stage_split(self._timelines.pop(r.run_id, [])).items():
                self.m.stage_seconds.observe(seconds, tags={"stage": stage})
        while len(self._timelines) > 1000:  # runs that never finished
            self._timelines.popitem(last=False)
        while len(self._flows) > 1000:
            self._flows.pop(next(iter(self._flows)))


# Path prefix -> the route label: a handful of values, whatever paths clients send.
ROUTE_LABELS = (
    ("/api/chat", "chat"),
    ("/api/alerts", "alerts"),
    ("/api/diagnosis/", "trace"),
    ("/v1/chat/completions", "v1_chat"),
    ("/v1/embeddings", "v1_embeddings"),
    ("/v1/models", "v1_models"),
    ("/mcp", "mcp"),
    ("/metrics", "metrics"),
    ("/readyz", "probe"),
    ("/healthz", "probe"),
    ("/livez", "probe"),
    ("/console/", "console"),
)


def route_label(path: str) -> str:
    return next((label for prefix, label in ROUTE_LABELS if path.startswith(prefix)), "other")


class RequestMetrics:
    """Counts every HTTP response by route and status, and times it to its last byte. Pure ASGI, so a
    chat's stream passes through untouched (its duration is the whole stream's)."""

    def __init__(self, app: Any, metrics: ServiceMetrics) -> None:
        self.app = app
        self.m = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        root = str(scope.get("root_path", "")).rstrip("/")
        path = str(scope.get("path", ""))
        route = route_label(path[len(root) :] if root and path.startswith(root) else path)
        status: int | None = None
        start = time.perf_counter()

        async def observed(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, observed)
        except BaseException as err:
            if status is None:  # nothing answered: the client left (nginx's 499), or the app raised (500)
                status = 499 if isinstance(err, asyncio.CancelledError | OSError | ClientDisconnect) else 500
            raise
        finally:
            try:
                self.m.http_requests.inc(1, tags={"route": route, "status": str(status or 500)})
                self.m.http_seconds.observe(time.perf_counter() - start, tags={"route": route})
            except Exception as err:  # an observer: never a cost to the response
                log.warning("request not counted: %s", type(err).__name__)


def stage_split(timeline: list[tuple[float, str]]) -> dict[str, float]:
    """Seconds per phase: each gap between consecutive timeline events goes to the later one's phase."""
    out: dict[str, float] = defaultdict(float)
    for (t0, _), (t1, phase) in itertools.pairwise(timeline):
        out[phase] += max(0.0, t1 - t0)
    return dict(out)


# The node's series this view shows, under the names a scrape of the service expects.
RENAMED = {"ray_raydiag_": "raydiag_", "ray_vllm_": "vllm_"}


def node_view(text: str) -> str:
    """The raydiag and vLLM series of a node's Prometheus text, named ``raydiag_*`` and ``vllm_*`` and
    summed over workers (``raydiag_build_info`` is 1, not one per replica). raydiag's counters and
    histograms are there from the start: at 0 until their first event."""
    from prometheus_client.parser import text_string_to_metric_families

    # Only these lines are parsed: a busy node exports thousands of Ray and Serve series.
    heads = tuple(p for prefix in RENAMED for p in (prefix, f"# HELP {prefix}", f"# TYPE {prefix}"))
    ours = "\n".join(line for line in text.splitlines() if line.startswith(heads))
    lines: list[str] = []
    seen: set[str] = set()
    for family in text_string_to_metric_families(ours + "\n"):
        if not family.name.startswith(tuple(RENAMED)):
            continue
        name = family.name[len("ray_") :]
        seen.add(name)
        sums: dict[tuple[str, tuple[tuple[str, str], ...]], float] = defaultdict(float)
        for s in family.samples:
            labels = tuple(
                sorted((k, v) for k, v in s.labels.items() if k not in WORKER_LABELS and not k.startswith("otel_"))
            )
            key = (s.name[len("ray_") :], labels)
            sums[key] = max(sums[key], s.value) if name == "raydiag_build_info" else sums[key] + s.value
        typed = f"{name}_total" if family.type == "counter" else name  # the counter's samples end in _total
        lines.append(f"# HELP {typed} {family.documentation}")
        lines.append(f"# TYPE {typed} {family.type}")
        for (sample, labels), value in sums.items():
            lines.append(_sample(sample, labels, value))
    lines.extend(_zeros(seen))
    return "\n".join(lines) + "\n"


def _sample(name: str, labels: tuple[tuple[str, str], ...], value: float) -> str:
    rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
    return f"{name}{{{rendered}}} {value}" if rendered else f"{name} {value}"


def _zeros(seen: set[str]) -> list[str]:
    """raydiag's counters and histograms that no worker on the node has recorded yet, at 0."""
    lines: list[str] = []
    for name, text, _ in COUNTERS.values():
        if name.removesuffix("_total") in seen:
            continue
        lines += [f"# HELP {name} {text}", f"# TYPE {name} counter"]
        if name == "raydiag_admission_rejections_total":
            lines += [_sample(name, (("limit", limit),), 0.0) for limit in REJECTION_LIMITS]
        else:
            lines.append(_sample(name, (), 0.0))
    for name, text, _ in HISTOGRAMS.values():
        if name in seen:
            continue
        lines += [f"# HELP {name} {text}", f"# TYPE {name} histogram"]
        lines += [_sample(f"{name}_bucket", (("le", "+Inf"),), 0.0), f"{name}_sum 0.0", f"{name}_count 0.0"]
    return lines


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
