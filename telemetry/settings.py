"""Telemetry settings: which backend the tools read, and the clock a deployment may pin."""

from __future__ import annotations

from pathlib import PurePath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

_POD_RE = "({service})-[a-z0-9]+-[a-z0-9]+"
# Where the demo incident ships in a checkout (knowledge/telemetry/{logs,metrics}).
BUNDLED_TELEMETRY = "knowledge/telemetry"


class PromSignal(BaseModel):
    """How one logical signal reads from Prometheus."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        description="PromQL with a {service} placeholder, used inside a regex matcher: the service name for one "
        "service, '.+' for all of them in one query."
    )
    instance_label: str = Field(
        default="pod", description="Label naming a result series' instance, or a template such as '{caller}->{callee}'."
    )
    service_label: str | None = Field(
        default=None,
        description="Label whose value is the service; None derives it from instance_label by stripping the pod's "
        "two hash suffixes.",
    )


def _cadvisor(expr: str) -> PromSignal:
    return PromSignal(query=expr.replace("POD_RE", _POD_RE), instance_label="pod")


def _otel(expr: str) -> PromSignal:
    return PromSignal(query=expr, instance_label="service_name", service_label="service_name")


DEFAULT_CATALOGUE: dict[str, PromSignal] = {
    # cAdvisor / kubelet container metrics, one series per pod.
    "cpu": _cadvisor('sum by (pod) (rate(container_cpu_usage_seconds_total{container!="",pod=~"POD_RE"}[2m]))'),
    "memory": _cadvisor('sum by (pod) (container_memory_working_set_bytes{container!="",pod=~"POD_RE"})'),
    "net_rx": _cadvisor('sum by (pod) (rate(container_network_receive_bytes_total{pod=~"POD_RE"}[2m]))'),
    "net_tx": _cadvisor('sum by (pod) (rate(container_network_transmit_bytes_total{pod=~"POD_RE"}[2m]))'),
    # OpenTelemetry HTTP semantic conventions (http.server.request.duration as exported to Prometheus).
    "latency_p90": _otel(
        "histogram_quantile(0.9, sum by (le, service_name) "
        '(rate(http_server_request_duration_seconds_bucket{service_name=~"{service}"}[2m])))'
    ),
    "latency_p99": _otel(
        "histogram_quantile(0.99, sum by (le, service_name) "
        '(rate(http_server_request_duration_seconds_bucket{service_name=~"{service}"}[2m])))'
    ),
    "error_rate": _otel(
        "100 * sum by (service_name) (rate(http_server_request_duration_seconds_count"
        '{service_name=~"{service}",http_response_status_code=~"5.."}[2m])) / sum by (service_name) '
        '(rate(http_server_request_duration_seconds_count{service_name=~"{service}"}[2m]))'
    ),
    "throughput": _otel(
        'sum by (service_name) (rate(http_server_request_duration_seconds_count{service_name=~"{service}"}[2m]))'
    ),
    "client_latency_p90": _otel(
        "histogram_quantile(0.9, sum by (le, service_name) "
        '(rate(http_client_request_duration_seconds_bucket{service_name=~"{service}"}[2m])))'
    ),
}


class PromEdges(BaseModel):
    """The call graph from series whose labels name the caller and the callee."""

    model_config = ConfigDict(extra="forbid")

    match: str = Field(description="A series selector for /api/v1/series, e.g. 'traces_service_graph_request_total'.")
    caller_label: str = Field(default="client")
    callee_label: str = Field(default="server")


class PrometheusSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(default="http://127.0.0.1:9090", description="Prometheus base URL (HTTP API v1).")
    step_s: float = Field(default=60.0, gt=0, description="query_range resolution in seconds.")
    timeout_s: float = Field(default=10.0, gt=0, description="Timeout of one HTTP query.")
    catalogue: dict[str, PromSignal] = Field(
        default_factory=lambda: dict(DEFAULT_CATALOGUE),
        description="Logical signal -> PromQL. Defaults read cAdvisor (cpu, memory, network) and OpenTelemetry HTTP "
        "server/client duration histograms (latency, errors, throughput).",
    )
    edges: PromEdges | None = Field(
        default=None,
        description="Where the call graph comes from (e.g. Tempo's service graph: "
        "traces_service_graph_request_total with client/server labels); None: no call graph.",
    )


class JaegerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(
        default=None,
        description="Jaeger query service base URL (its HTTP API, e.g. http://127.0.0.1:16686); None: no Jaeger.",
    )
    timeout_s: float = Field(default=10.0, gt=0, description="Timeout of one HTTP call.")
    traces_per_service: int = Field(
        default=500, gt=0, description="'limit' of one /api/traces call: the most traces read per service."
    )
    dependencies_lookback_s: float = Field(
        default=86400.0, gt=0, description="How far back /api/dependencies looks for the call graph."
    )


Modality = Literal["metrics", "logs", "traces"]
ALL_MODALITIES: tuple[Modality, ...] = ("metrics", "logs", "traces")


class TelemetrySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["file", "prometheus"] = Field(
        default="file",
        description="'file': the bundled demo, Loghub, NAB and Nezha files below; 'prometheus': PromQL over the HTTP "
        "API (logs still from the file roots).",
    )
    log_roots: list[str] = Field(
        default_factory=lambda: ["knowledge/telemetry/logs"],
        description="Folders of <service>.jsonl logs and Loghub *_structured.csv files.",
    )
    metric_roots: list[str] = Field(
        default_factory=lambda: ["knowledge/telemetry/metrics"],
        description="Folders of <service>/<metric>.csv series (timestamp,value), NAB layout included.",
    )
    nezha_days: list[str] = Field(
        default_factory=list,
        description="Nezha day folders (rca_data/<day>: metric/, log/, trace/; CSVs plain or gzip) served as "
        "one system.",
    )
    modalities: list[Modality] = Field(
        default_factory=lambda: list(ALL_MODALITIES),
        min_length=1,
        description="What rank_anomalies scores: metric series, error-level log lines per service, and the latency "
        "of the spans each service serves (where the backend has logs or traces).",
    )
    clock: str | None = Field(
        default=None,
        description="Pin the run clock (as_of) to this instant (RFC 3339), e.g. the bundled demo incident's time; "
        "None: the wall clock. Tools never see data after the clock.",
    )
    window_minutes: float = Field(
        default=30.0, gt=0, description="Default window: the last N minutes before the clock."
    )
    baseline_minutes: float = Field(default=30.0, gt=0, description="Baseline: the N minutes before the window.")
    yearless_year: int | None = Field(
        default=None, description="Year for log lines without one (Loghub Linux, OpenSSH); None: the current year."
    )
    prometheus: PrometheusSettings = Field(default_factory=PrometheusSettings, description="The Prometheus backend.")
    jaeger: JaegerSettings = Field(
        default_factory=JaegerSettings, description="Spans and the call graph from Jaeger, beside either backend."
    )

    def describe(self) -> str:
        """Where the tools' telemetry comes from, in a few words for a report's ``limitations.scope``: a
        reader must be able to tell an answer about the bundled synthetic incident or a replay from one
        about their own systems."""
        parts: list[str] = []
        if self.backend == "prometheus":
            parts.append(f"Prometheus at {self.prometheus.url}")
        if self.jaeger.url:
            parts.append(f"traces from Jaeger at {self.jaeger.url}")
        roots = [*self.metric_roots, *self.log_roots] if self.backend == "file" else list(self.log_roots)
        bundled = [r for r in roots if PurePath(r).parent.as_posix().endswith(BUNDLED_TELEMETRY)]
        if bundled:
            logs_only = self.backend == "prometheus"
            parts.append(("logs of " if logs_only else "") + "the bundled demo incident (synthetic)")
        others = sorted({PurePath(r).name for r in roots if r not in bundled})
        if others:
            parts.append("files under " + ", ".join(others))
        if self.backend == "file" and self.nezha_days:
            days = ("/".join(PurePath(d).parts[-2:]) for d in self.nezha_days)
            parts.append("a Nezha replay of " + ", ".join(days))
        return "; ".join(parts) or "none"
