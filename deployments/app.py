"""The one wiring file: validated config in, Ray Serve application out."""

from __future__ import annotations

from typing import Any

from ray.serve import Application

from deployments.audit_actor import AuditWriterDeployment
from deployments.config import (
    AppConfig,
    AutoscalingSettings,
    EmbedderDeploymentSettings,
    load_config,
    parse_config,
    resolve_paths,
)
from deployments.embedder import EmbedderDeployment
from deployments.ingress import Ingress
from deployments.llm import LLMServer
from deployments.search import SearchDeployment
from rag.settings import SearchSettings


def replicas(num_replicas: int, autoscaling: AutoscalingSettings | None) -> dict[str, Any]:
    """Serve options for a fixed replica count or an autoscaling_config."""
    return {"autoscaling_config": autoscaling.serve_config()} if autoscaling else {"num_replicas": num_replicas}


def embedder_app(s: SearchSettings, scale: EmbedderDeploymentSettings | None = None) -> Application:
    """The embedder deployment for the configured backend."""
    scale = scale or EmbedderDeploymentSettings()
    actor: dict[str, Any] = {"num_cpus": s.embedder_num_cpus, "num_gpus": s.embedder_num_gpus}
    if s.embedder == "bge-m3" and s.bge_m3_runtime == "flagembedding":
        # FlagEmbedding needs transformers<5 (vLLM pins 5.x): the replica runs in its own environment.
        actor["runtime_env"] = {"py_executable": s.bge_m3_python}
    return EmbedderDeployment.options(  # type: ignore[attr-defined]
        **replicas(scale.num_replicas, scale.autoscaling),
        ray_actor_options=actor,
        max_ongoing_requests=max(128, s.embed_max_batch_size * 2),
    ).bind(
        s.embedder,
        s.embed_max_batch_size,
        s.embed_batch_wait_s,
        s.bge_m3_model,
        s.embedder_device,
        s.bge_m3_runtime,
        s.bge_m3_max_length,
    )


def build_app(cfg: AppConfig, pipeline_cls: str = "harness.pipeline:DiagnosisPipeline") -> Application:
    cfg = resolve_paths(cfg)
    audit = AuditWriterDeployment.options(  # type: ignore[attr-defined]
        max_ongoing_requests=cfg.audit_deployment.max_ongoing_requests,
        ray_actor_options={"num_cpus": cfg.audit_deployment.num_cpus},
    ).bind(cfg.audit)
    llm = None
    if cfg.llm.backend == "vllm":
        llm = LLMServer.options(  # type: ignore[attr-defined]
            **replicas(cfg.llm.num_replicas, cfg.llm.autoscaling),
            max_ongoing_requests=cfg.llm.max_ongoing_requests,
            ray_actor_options={"num_cpus": cfg.llm.num_cpus, "num_gpus": cfg.llm.num_gpus},
        ).bind(cfg.llm, cfg.llm.model_path())
    embedder = search = None
    if cfg.search.enabled:
        s = cfg.search
        embedder = embedder_app(s, cfg.embedder_deployment)
        search = SearchDeployment.options(  # type: ignore[attr-defined]
            num_replicas=1 if "://" not in s.milvus_uri else s.replicas,
            ray_actor_options={"num_cpus": 0},
        ).bind(s.milvus_uri, s.collection, s.dim(), s.embedder == "bge-m3", s.fusion)
    return Ingress.options(  # type: ignore[attr-defined]
        **ingress_options(cfg)
    ).bind(cfg, audit, llm, embedder, search, pipeline_cls)


def ingress_options(cfg: AppConfig) -> dict[str, Any]:
    """Replicas (fixed, or autoscaled on open streams per replica), concurrency and CPUs of the ingress."""
    return {
        **replicas(cfg.ingress.num_replicas, cfg.ingress.autoscaling),
        "max_ongoing_requests": cfg.ingress.max_ongoing_requests,
        "max_queued_requests": cfg.ingress.max_queued_requests,
        "graceful_shutdown_timeout_s": cfg.ingress.graceful_shutdown_timeout_s,
        "ray_actor_options": {"num_cpus": cfg.ingress.num_cpus},
    }


def app_builder(args: dict[str, Any]) -> Application:
    """Serve's entry point. ``serve deploy configs/serve.cluster.yaml`` passes the file's
    ``args.raydiag`` section; ``serve run deployments.app:app_builder config=FILE`` passes a path.
    ``RAYDIAG_*`` variables override either."""
    if isinstance(args.get("raydiag"), dict):
        return build_app(parse_config(args["raydiag"], "serve deploy args.raydiag"))
    return build_app(load_config(args.get("config")))
