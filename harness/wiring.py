"""Builds the harness from settings (no Ray): the ingress calls this once per replica; tests and
benchmarks use the same wiring."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from cluster.backend import ClusterBackend
from cluster.factory import make_backend
from cluster.settings import ClusterSettings
from harness.history import HistoryStore
from harness.model import ChatModel
from harness.pipeline import DiagnosisPipeline
from harness.protocols import AuditSink
from harness.routing import Embed
from harness.scope import RunScope
from harness.settings import HarnessSettings
from harness.tools.base import Tool
from harness.tools.current_time import CurrentTimeTool
from harness.tools.kubernetes import kubernetes_tools
from harness.tools.lookup_knowledge import KnowledgeLookup, LookupKnowledgeTool
from harness.tools.read_skill import ReadSkillTool, Skill, load_skills
from harness.tools.telemetry import (
    QueryLogsTool,
    QueryMetricsTool,
    RankAnomaliesTool,
    ServiceDependenciesTool,
    TelemetryView,
)
from harness.tools.traces import QueryTracesTool
from telemetry.combined import ClockedTelemetry
from telemetry.factory import BackendCache, pinned_clock
from telemetry.settings import TelemetrySettings


def tool_factory(
    telemetry: TelemetrySettings,
    skills: dict[str, Skill],
    lookup: KnowledgeLookup | None = None,
    cluster: ClusterSettings | None = None,
) -> Callable[[RunScope], list[Tool]]:
    """A factory of each run's tool set (the allow-list the executor sees), bound to the run's clock,
    telemetry and Kubernetes cluster (the service's, or the ones the run's internal options name)."""
    backends = BackendCache()
    service_cluster = make_backend(cluster) if cluster is not None else None

    def cluster_of(scope: RunScope) -> tuple[ClusterBackend | None, int]:
        if scope.cluster is not None:
            return make_backend(scope.cluster), scope.cluster.max_output_chars
        return service_cluster, cluster.max_output_chars if cluster is not None else 20000

    def tools(scope: RunScope) -> list[Tool]:
        settings = scope.telemetry or telemetry
        backend = ClockedTelemetry(backends.get(settings), scope.as_of)
        view = TelemetryView(
            backend,
            scope.as_of,
            scope.incident_start,
            settings.window_minutes * 60,
            settings.baseline_minutes * 60,
            tuple(settings.modalities),
        )
        out: list[Tool] = [
            RankAnomaliesTool(view),
            QueryMetricsTool(view),
            QueryLogsTool(view),
            ServiceDependenciesTool(view),
            ReadSkillTool(skills),
            CurrentTimeTool(lambda: scope.as_of),
        ]
        if settings.nezha_days or settings.jaeger.url:  # the trace sources: others' tool lists stay as they were
            out.insert(4, QueryTracesTool(view))
        if lookup is not None:
            out.insert(0, LookupKnowledgeTool(lookup))
        k8s, max_chars = cluster_of(scope)
        if k8s is not None:
            out += kubernetes_tools(k8s, max_chars)
        return out

    return tools


def bundled_telemetry(root: Path) -> TelemetrySettings:
    """The demo telemetry shipped in ``knowledge/telemetry`` under a checkout at ``root``, with the clock
    pinned to the demo incident (its data ends at 10:30 UTC on 2026-11-30)."""
    base = root / "knowledge" / "telemetry"
    return TelemetrySettings(log_roots=[str(base / "logs")], metric_roots=[str(base / "metrics")], clock=DEMO_CLOCK)


DEMO_CLOCK = "2026-11-30T10:15:00Z"


def _sources(scope: RunScope, telemetry: TelemetrySettings, cluster: ClusterSettings | None) -> str:
    """Where a run's evidence comes from, for the answer's limitations: the telemetry and the cluster."""
    k8s = scope.cluster or cluster
    parts = [(scope.telemetry or telemetry).describe(), k8s.describe() if k8s is not None else ""]
    return "; ".join(p for p in parts if p)


def service_clock(telemetry: TelemetrySettings) -> Callable[[], float]:
    pinned = pinned_clock(telemetry)
    return (lambda: pinned) if pinned is not None else time.time


def build_pipeline(
    sink: AuditSink,
    settings: HarnessSettings,
    telemetry: TelemetrySettings,
    model: ChatModel | None,
    lookup: KnowledgeLookup | None = None,
    pipeline_cls: type[DiagnosisPipeline] = DiagnosisPipeline,
    embed: Embed | None = None,
    history: HistoryStore | None = None,
    cluster: ClusterSettings | None = None,
) -> DiagnosisPipeline:
    """A pipeline with the shipped skills, the telemetry tools and, when given, lookup_knowledge and the
    embedder (the router's exemplar similarity)."""
    skills = load_skills()
    return pipeline_cls(
        sink,
        settings,
        model=model,
        tools=tool_factory(telemetry, skills, lookup, cluster),
        skills=skills,
        clock=service_clock(telemetry),
        embed=embed,
        history=history,
        telemetry_source=lambda scope: _sources(scope, telemetry, cluster),
    )
