"""Builds the harness's tools from settings (no Ray): the ingress calls this once per replica."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.settings import TelemetrySettings
from harness.tools.base import Tool
from harness.tools.current_time import CurrentTimeTool
from harness.tools.lookup_knowledge import KnowledgeLookup, LookupKnowledgeTool
from harness.tools.read_skill import ReadSkillTool, Skill
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
