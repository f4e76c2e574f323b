"""The one wiring file: validated config in, Ray Serve application out."""

from __future__ import annotations

from typing import Any

from ray.serve import Application

from deployments.audit_actor import AuditWriterDeployment
from deployments.config import AppConfig, load_config, resolve_paths
from deployments.ingress import Ingress
from deployments.llm import LLMServer


def build_app(cfg: AppConfig, pipeline_cls: str = "harness.pipeline:DiagnosisPipeline") -> Application:
    cfg = resolve_paths(cfg)
    audit = AuditWriterDeployment.options(  # type: ignore[attr-defined]
        max_ongoing_requests=cfg.audit_deployment.max_ongoing_requests,
        ray_actor_options={"num_cpus": cfg.audit_deployment.num_cpus},
    ).bind(cfg.audit)
    llm = None
    if cfg.llm.backend == "vllm":
        llm = LLMServer.options(  # type: ignore[attr-defined]
            num_replicas=cfg.llm.num_replicas,
            max_ongoing_requests=cfg.llm.max_ongoing_requests,
            ray_actor_options={"num_cpus": cfg.llm.num_cpus, "num_gpus": cfg.llm.num_gpus},
        ).bind(cfg.llm, cfg.llm.model_path())
    return Ingress.options(  # type: ignore[attr-defined]
        num_replicas=cfg.ingress.num_replicas,
        max_ongoing_requests=cfg.ingress.max_ongoing_requests,
        ray_actor_options={"num_cpus": cfg.ingress.num_cpus},
    ).bind(cfg, audit, llm, pipeline_cls)


def app_builder(args: dict[str, Any]) -> Application:
    """Entry point for ``serve run deployments.app:app_builder config=configs/serve.local.yaml``."""
    return build_app(load_config(args.get("config")))
