"""The tools against real data: bundled demo telemetry, Loghub and NAB files, the shipped skills."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harness.tools.base import ToolBoundary, ToolResult
from harness.tools.current_time import CurrentTimeTool
from harness.tools.read_skill import ReadSkillTool, load_skills
from harness.tools.telemetry import FileTelemetry, QueryLogsTool, QueryMetricsTool
from tests.conftest import REPO

BUNDLED = REPO / "knowledge" / "telemetry"


async def test_bundled_logs_show_the_demo_incident() -> None:
    tool = QueryLogsTool(FileTelemetry.bundled(BUNDLED))
    result = await tool.run({"service": "payment-service", "query": "connection is not available"})
    assert result.status == "success" and result.output["total_matches"] == 16
    assert "timed out after 30000ms" in result.output["matches"][0]["message"]
    errors = await tool.run({"service": "payment-service", "level": "error", "limit": 3})
    assert len(errors.output["matches"]) == 3 and all(m["level"] == "ERROR" for m in errors.output["matches"])
    assert (await tool.run({"service": "payment-service", "query": "kafka"})).status == "no_data"
    missing = await tool.run({"service": "nope"})
    assert missing.status == "no_data" and "payment-service" in missing.output["services"]


async def test_bundled_metrics_summaries() -> None:
    tool = QueryMetricsTool(FileTelemetry.bundled(BUNDLED))
    listing = await tool.run({"service": "payment-service"})
    assert "hikaricp_connections_active" in listing.output["metrics"]
    active = await tool.run({"service": "payment-service", "metric": "hikaricp_connections_active"})
    assert active.output["max"] == 20.0 and active.output["peak_at"].startswith("2026-11-30T10:0")
    assert (await tool.run({"service": "payment-service", "metric": "nope"})).status == "no_data"


async def test_loghub_and_nab_files_from_shared_data(shared_dir: Path) -> None:
    data = shared_dir / "data"
    backend = FileTelemetry([data / "loghub-2k"], [data / "nab-metrics" / "data"])
    logs = await QueryLogsTool(backend).run({"service": "openssh", "query": "Failed password"})
    assert logs.status == "success" and logs.output["total_matches"] > 100
    hdfs = await QueryLogsTool(backend).run(
        {"service": "hdfs", "query": "PacketResponder terminating", "level": "INFO"}
    )
    assert hdfs.status == "success" and all(m["level"] == "INFO" for m in hdfs.output["matches"])
    metrics = await QueryMetricsTool(backend).run({"service": "realAWSCloudwatch"})
    name = metrics.output["metrics"][0]
    series = await QueryMetricsTool(backend).run({"service": "realAWSCloudwatch", "metric": name})
    assert (
        series.status == "success" and series.output["points"] > 1000 and series.output["max"] >= series.output["p95"]
    )


async def test_skills_load_and_read() -> None:
    skills = load_skills()
    assert "db-connection-pool-exhaustion" in skills and all(s.description for s in skills.values())
    tool = ReadSkillTool(skills)
    got = await tool.run({"name": "db-connection-pool-exhaustion"})
    assert got.status == "success" and "hikaricp_connections_active" in got.output["content"]
    assert (await tool.run({"name": "nope"})).status == "no_data"


async def test_current_time() -> None:
    result = await CurrentTimeTool().run({})
    assert result.status == "success" and result.output["utc_now"].endswith("+00:00")


class _Slow:
    name = "slow"
    description = "sleeps"
    parameters: dict[str, Any] = {"type": "object"}

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        await asyncio.sleep(5)
        return ToolResult("success", {})


class _Broken:
    name = "broken"
    description = "raises"
    parameters: dict[str, Any] = {"type": "object"}

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        raise RuntimeError("backend exploded")


async def test_boundary_turns_failures_into_values() -> None:
    boundary = ToolBoundary([_Slow(), _Broken(), CurrentTimeTool()], timeout_s=0.1)
    assert (await boundary.call("c1", "slow", {})).result.error == "timed out after 0.1s"
    broken = await boundary.call("c2", "broken", {})
    assert broken.result.status == "error" and "backend exploded" in (broken.result.error or "")
    assert (await boundary.call("c3", "drop_tables", {})).result.error == "tool 'drop_tables' is not allowed"
    assert (await boundary.call("c4", "current_time", ["not", "a", "dict"])).result.error == "bad arguments"
    assert set(boundary.ledger) == {"c1", "c2", "c3", "c4"}
