"""The ingress deployment: HTTP + SSE, the pipeline, and the producer side of the audit path."""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

import numpy as np
from fastapi import FastAPI
from ray import serve
from ray.serve.handle import DeploymentHandle

from audit.records import AuditRecord
from audit.spill_owner import adopt_orphans, claim, family_of, replica_spill_path
from deployments.admission import Admission, ClusterTenantCap
from deployments.alerts import ClusterAlertDedupe
from deployments.audit_client import BufferedAuditSink
from deployments.config import AppConfig
from deployments.http_api import create_api
from deployments.limits import ActiveRuns, RunLimiter
from deployments.llm_client import LLMHandleModel
from deployments.mcp_server import build_mcp, hold_open, mcp_routes
from deployments.metrics import MetricsSink, RequestMetrics, ServiceMetrics, add_metrics_route, build_labels
from deployments.openai_api import add_openai_routes
from deployments.openai_client import OpenAIEndpointModel
from deployments.session_memory import SharedHistory, memory_actor
from deployments.stopping import DrainWatch, stop_signal
from harness.contracts import ChatRequest, SseEvent, event_data
from harness.model import ChatModel
from harness.pipeline import DiagnosisPipeline
from harness.routing import Embed
from harness.rules_model import RulesModel
from harness.scope import RunOptions
from harness.wiring import build_pipeline
from rag.embedding import Encoded
from rag.lookup import KnowledgeLookupService
from rag.store import Hit, SearchMode

log = logging.getLogger(__name__)


def _import(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _model(cfg: AppConfig, llm: DeploymentHandle | None) -> ChatModel | None:
    if cfg.llm.backend == "scripted":
        return RulesModel()  # the zero-latency profile for load tests and demos (harness/rules_model.py)
    if cfg.llm.backend == "openai" and cfg.llm.base_url:
        return OpenAIEndpointModel(
            cfg.llm.base_url, cfg.llm.model, cfg.llm.structured_output, cfg.llm.request_timeout_s
        )
    return LLMHandleModel(llm) if llm is not None else None


def traced_sink(cfg: AppConfig, sink: BufferedAuditSink) -> Any:
    """``sink``, or with ``tracing.otlp_endpoint`` set, ``sink`` behind the GenAI trace exporter."""
    url = cfg.tracing.traces_url()
    if url is None:
        return sink
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from audit.genai_traces import GenAiTraceSink

    provider = {"vllm": "vllm", "openai": "openai"}.get(cfg.llm.backend, f"raydiag.{cfg.llm.backend}")
    return GenAiTraceSink(
        sink,
        OTLPSpanExporter(endpoint=url),
        model=cfg.llm.model,
        provider=provider,
        capture_content=cfg.tracing.capture_content,
        service_name=cfg.tracing.service_name,
    )


def _lookup(
    cfg: AppConfig, embedder: DeploymentHandle | None, search: DeploymentHandle | None
) -> KnowledgeLookupService | None:
    """lookup_knowledge over the embedder and search deployments' handles."""
    if embedder is None or search is None:
        return None

    async def embed(texts: list[str]) -> Encoded:
        return await embedder.encode.remote(texts)

    async def run_search(
        query: str,
        qvec: np.ndarray,
        qlex: dict[int, float] | None,
        mode: SearchMode,
        limit: int,
        domains: list[str] | None,
        gvec: np.ndarray | None,
    ) -> list[Hit]:
        return await search.search.remote(query, qvec, qlex, mode, limit, domains, gvec)

    s = cfg.search
    settings = s.lookup()

    async def doc_chunks(doc_id: str, qvec: np.ndarray) -> list[Hit]:
        return await search.doc_chunks.remote(doc_id, qvec)

    return KnowledgeLookupService(embed, run_search, settings, doc_chunks)


def _embed(embedder: DeploymentHandle | None) -> Embed | None:
    """The router's exemplar similarity and the verifier's meaning check, through the same embedder
    deployment the lookup uses."""
    if embedder is None:
        return None

    async def embed(texts: list[str]) -> np.ndarray:
        encoded: Encoded = await embedder.encode.remote(texts)
        return np.asarray(encoded.dense)

    return embed


# What each readiness probe asks a deployment, and the key its answer goes under (None: it is a dict).
PROBES = {"llm": ("models", "models"), "embedder": ("info", None), "search": ("knowledge", None)}


def readiness_probes(
    llm: DeploymentHandle | None, embedder: DeploymentHandle | None, search: DeploymentHandle | None
) -> dict[str, Callable[[], Awaitable[dict[str, Any]]]]:
    """One cheap call per deployment a chat needs; each answers only once a replica serves it (a
    handle call waits while the LLM replica still loads its model)."""

    def probe(handle: DeploymentHandle, method: str, key: str | None) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def ask() -> dict[str, Any]:
            answer = await getattr(handle, method).remote()
            return dict(answer) if key is None else {key: answer}

        return ask

    handles = {"llm": llm, "embedder": embedder, "search": search}
    return {name: probe(h, *PROBES[name]) for name, h in handles.items() if h is not None}


class AuditHandle:
    """Adapts the audit deployment's handle to the API's ``AuditBackend`` protocol."""

    def __init__(self, handle: DeploymentHandle, timeout_s: float = 30.0) -> None:
        self.handle = handle
        self.timeout_s = timeout_s

    async def _call(self, method: str, *args: Any) -> Any:
        return await asyncio.wait_for(getattr(self.handle, method).remote(*args), self.timeout_s)

    async def trace(self, session_id: str, run_id: str | None, tenant_id: str | None) -> dict[str, Any]:
        return await self._call("trace", session_id, run_id, tenant_id)

    async def reasoning(self, session_id: str, run_id: str | None, tenant_id: str | None) -> dict[str, Any]:
        return await self._call("reasoning", session_id, run_id, tenant_id)

    async def runs(self, session_id: str, tenant_id: str | None) -> dict[str, Any]:
        return await self._call("runs", session_id, tenant_id)

    async def run_exists(self, session_id: str, run_id: str, tenant_id: str | None) -> bool:
        return bool(await self._call("run_exists", session_id, run_id, tenant_id))

    async def health(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.handle.health.remote(), 2.0)

    async def submit(self, records: list[dict[str, Any]], floors: dict[str, int]) -> None:
        """Returns once the writer has committed or durably spilled the records; raises otherwise (the
        writer replica died, or did not answer within the timeout) and the caller keeps the batch."""
        await self._call("submit", records, floors)


@serve.deployment(name="ingress")
@serve.ingress()
class Ingress:
    def __init__(
        self,
        cfg: AppConfig,
        audit: DeploymentHandle,
        llm: DeploymentHandle | None = None,
        embedder: DeploymentHandle | None = None,
        search: DeploymentHandle | None = None,
        pipeline_cls: str = "harness.pipeline:DiagnosisPipeline",
    ) -> None:
        self.cfg = cfg
        self.llm = llm
        self.embedder = embedder
        self.probes = readiness_probes(llm, embedder, search)
        self.audit = AuditHandle(audit)
        ctx = serve.get_replica_context()
        self.replica_id = ctx.replica_id.unique_id
        # One spill file per replica, owned (flock) while it lives; files of replicas that are gone are
        # adopted here, so their records ship with this replica's (audit/spill_owner.py).
        spill = replica_spill_path(cfg.audit.spill_path, f"ingress-{self.replica_id}")
        self._spill_lock = claim(spill)
        adopt_orphans(spill, family_of(cfg.audit.spill_path, "ingress"))
        self.sink = BufferedAuditSink(
            self.audit.submit,
            batch_size=cfg.audit.batch_size,
            spill_path=str(spill),
            retry_max_s=cfg.audit.retry_max_s,
        )
        # The pipeline class is injectable (by import path, so it crosses process boundaries) for tests
        # that pace or script it; production uses the default.
        cls = _import(pipeline_cls)
        if not (isinstance(cls, type) and issubclass(cls, DiagnosisPipeline)):
            raise TypeError(f"{pipeline_cls} is not a DiagnosisPipeline")
        self.lookup = _lookup(cfg, embedder, search)
        # With tracing on, the pipeline's records also become one OpenTelemetry trace per run; with
        # metrics on, they are counted into the raydiag_* series (deployments/metrics.py).
        self.traced = traced_sink(cfg, self.sink)
        self.metrics = ServiceMetrics() if cfg.ingress.metrics else None
        self.run_sink = MetricsSink(self.traced, self.metrics) if self.metrics else self.traced
        self.pipeline = build_pipeline(
            self.run_sink,
            cfg.harness,
            cfg.telemetry,
            model=_model(cfg, llm),
            lookup=self.lookup,
            pipeline_cls=cls,
            embed=_embed(embedder),
            history=(
                SharedHistory(memory_actor(ctx.app_name), cfg.ingress.session_memory_timeout_s)
                if cfg.ingress.session_memory == "cluster"
                else None
            ),
            cluster=cfg.kubernetes if cfg.kubernetes.backend != "none" else None,
        )
        # Runs past their first event that may work at once; the others wait their turn (FIFO) with
        # their stream open, so a busy replica's event loop stays short and new streams start fast.
        self.active_runs = ActiveRuns(cfg.ingress.max_active_runs)
        self.limiter = RunLimiter(cfg.ingress.max_concurrent_runs, cfg.ingress.max_runs_per_tenant)
        if self.metrics is not None:
            rejections = self.metrics.admission_rejections
            self.limiter.on_reject = lambda limit: rejections.inc(1, tags={"limit": limit})
            # Gauges are set on a clock, not only on events, so every series is there from start-up and
            # between runs (an alert `for: 5m` holds only on a series that does not vanish).
            self._gauges_task = asyncio.get_running_loop().create_task(
                self.metrics.keep_gauges(self._gauge_values, build_labels(cfg))
            )
        self.drain = DrainWatch(ctx.app_name, self.replica_id, self.limiter.in_flight)
        # A tenant's cap counts its runs on every replica (the control actor the drain watch reports to).
        self.cluster_cap = ClusterTenantCap(ctx.app_name, self.replica_id, cfg.ingress.max_runs_per_tenant)
        # A group Alertmanager sends again is recognised by whichever replica it reaches.
        self.alert_dedupe = ClusterAlertDedupe(ctx.app_name, stop_signal)
        # Serve runs a synchronous constructor on the replica's event loop: the watch lives there.
        self._drain_task = asyncio.get_running_loop().create_task(self.drain.run())
        # /mcp: the MCP server over the same pipeline, audit and limits (deployments/mcp_server.py). The
        # SDK's session manager serves only while its context is open: for the replica's life.
        self._mcp_stop = asyncio.Event()
        self._mcp_routes: list[Any] = []
        if cfg.ingress.mcp:
            admission = Admission(self.limiter, self.cluster_cap)
            mcp = build_mcp(
                self._run_chat,
                self.audit,
                self.lookup,
                admission,
                self.sink.flush,
                stopping=lambda: self.drain.draining,
            )
            self._mcp_routes = mcp_routes(mcp)
            self._mcp_task = asyncio.get_running_loop().create_task(hold_open(mcp, self._mcp_stop))

    async def _run_chat(
        self, req: ChatRequest, tenant_id: str | None, options: RunOptions | None = None
    ) -> AsyncGenerator[SseEvent, None]:
        """The pipeline's events, its first (``metadata``: the run's ids) at once and the rest of the
        run inside the active-run gate (see ``IngressSettings.max_active_runs``)."""
        async with aclosing(self.pipeline.run(req, tenant_id, options)) as events:
            async for event in events:
                yield event
                break
            async with self.active_runs.turn():
                async for event in events:
                    yield event

    async def diagnose_internal(self, session_id: str, question: str, options: dict[str, Any]) -> dict[str, Any]:
        """A run with an internal run context (its clock and telemetry: harness/scope.py), for the RCA
        evaluation and the alert webhook. Reached only through a Ray handle, never over HTTP, so no
        /api/chat caller can set a clock or a dataset. Returns the run's events and its audited totals."""
        run_options = RunOptions.model_validate(options)
        request = ChatRequest(Id=session_id, Question=question)
        started = time.perf_counter()  # each event's time, so an evaluation can time the first finding
        events = [
            {"event": e.event, **event_data(e), "at_s": round(time.perf_counter() - started, 2)}
            async for e in self._run_chat(request, None, run_options)
        ]
        await self.sink.flush()
        run_id = next((e["run_id"] for e in events if e["event"] == "metadata"), None)
        totals: dict[str, Any] = {}
        if run_id:
            try:
                reply = await self.audit.trace(session_id, run_id, None)
                if reply.get("ok"):
                    run = reply["value"]["run"]
                    totals = {k: run.get(k) for k in ("total_token_count", "total_duration_ms", "status")}
                else:
                    log.warning("no trace for run %s: %s", run_id, reply.get("error"))
            except Exception as err:  # the evaluation scores the answer; totals are a bonus
                log.warning("no trace for run %s: %s", run_id, type(err).__name__)
        return {"events": events, "totals": totals}

    async def _gauge_values(self) -> dict[str, float]:
        values = {
            "runs_admitted": float(self.limiter.in_flight()),
            "runs_running": float(self.active_runs.running),
            "runs_waiting": float(self.active_runs.waiting),
            "audit_pending_records": float(self.sink.pending),
        }
        return values  # the writer's own counts are its gauges (deployments/audit_actor.py)

    async def _flush(self) -> bool:
        return await self.sink.flush()

    def _emit(self, record: AuditRecord) -> None:
        self.sink.emit(record)

    def __serve_build_asgi_app__(self) -> FastAPI:
        app = create_api(
            run_chat=self._run_chat,
            audit=self.audit,
            emit_record=self._emit,
            flush_audit=self._flush,
            max_body_bytes=self.cfg.ingress.max_body_bytes,
            max_openai_body_bytes=self.cfg.ingress.max_openai_body_bytes,
            api_keys=self.cfg.auth.api_keys,
            limiter=self.limiter,
            retry_after_s=self.cfg.ingress.retry_after_s,
            stopping=lambda: self.drain.draining,
            probes=self.probes,
            cluster_cap=self.cluster_cap,
            replica=self.replica_id,
            alerts=self.cfg.alerts,
            alert_dedupe=self.alert_dedupe,
        )
        if self.llm is not None:
            add_openai_routes(
                app,
                self.llm,
                embedder=self.embedder,
                limiter=self.limiter,
                cluster_cap=self.cluster_cap,
                sink=self.run_sink,
                retry_after_s=self.cfg.ingress.retry_after_s,
                stopping=lambda: self.drain.draining,
            )
        app.router.routes.extend(self._mcp_routes)
        if self.metrics is not None:
            add_metrics_route(app)
            app.add_middleware(RequestMetrics, metrics=self.metrics)  # outermost: refusals are counted too
        return app

    async def __del__(self) -> None:
        self._drain_task.cancel()
        if self.metrics is not None:
            self._gauges_task.cancel()
        self._mcp_stop.set()
        await self.drain.leave()
        if self.traced is not self.sink:
            self.traced.shutdown()  # export the traces still batched
        await self.sink.close()  # what it could not ship is in its spill file now
        self._spill_lock.close()  # the next replica on this node may adopt that file
