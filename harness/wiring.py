"""Builds the harness from settings (no Ray): the ingress calls this once per replica; tests and
benchmarks use the same wiring."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.model import ChatModel
from harness.pipeline import DiagnosisPipeline
from harness.protocols import AuditSink
from harness.settings import HarnessSettings, TelemetrySettings
from harness.tools.base import Tool
from harness.tools.current_time import CurrentTimeTool
from harness.tools.lookup_knowledge import KnowledgeLookup, LookupKnowledgeTool
from harness.tools.read_skill import ReadSkillTool, Skill, load_skills
from harness.tools.telemetry import FileTelemetry, QueryLogsTool, QueryMetricsTool


def telemetry_backend(settings: TelemetrySettings) -> FileTelemetry:
    if settings.backend != "file":
        raise ValueError(f"unknown telemetry backend {settings.backend!r}")
    return FileTelemetry([Path(p) for p in settings.log_roots], [Path(p) for p in settings.metric_roots])


def tool_factory(
    telemetry: TelemetrySettings, skills: dict[str, Skill], lookup: KnowledgeLookup | None = None
) -> Callable[[], list[Tool]]:
    """A factory of each run's tool set (the allow-list the executor sees)."""
    backend = telemetry_backend(telemetry)

    def tools() -> list[Tool]:
        out: list[Tool] = [CurrentTimeTool(), ReadSkillTool(skills), QueryLogsTool(backend), QueryMetricsTool(backend)]
        if lookup is not None:
            out.insert(0, LookupKnowledgeTool(lookup))
        return out

    return tools


def bundled_telemetry(root: Path) -> TelemetrySettings:
    """The demo telemetry shipped in ``knowledge/telemetry`` under a checkout at ``root``."""
    base = root / "knowledge" / "telemetry"
    return TelemetrySettings(log_roots=[str(base / "logs")], metric_roots=[str(base / "metrics")])


def build_pipeline(
    sink: AuditSink,
    settings: HarnessSettings,
    telemetry: TelemetrySettings,
    model: ChatModel | None,
    lookup: KnowledgeLookup | None = None,
    pipeline_cls: type[DiagnosisPipeline] = DiagnosisPipeline,
) -> DiagnosisPipeline:
    """A pipeline with the shipped skills, the telemetry tools and, when given, lookup_knowledge."""
    skills = load_skills()
    return pipeline_cls(
        sink,
        settings,
        model=model,
        tools=tool_factory(telemetry, skills, lookup),
        skill_catalog={s.name: s.description for s in skills.values()},
    )
