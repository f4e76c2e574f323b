"""The tools against real data: bundled demo telemetry, Loghub and NAB files, the shipped skills."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harness.scope import RunScope
from harness.tools.base import Tool, ToolBoundary, ToolResult
from harness.tools.current_time import CurrentTimeTool
from harness.tools.read_skill import ReadSkillTool, load_skills
from harness.tools.telemetry import MAX_LOG_LINES, MAX_RANKED, MAX_SERIES_POINTS, MAX_TEMPLATES
from harness.wiring import bundled_telemetry, tool_factory
from telemetry.clock import parse_instant
from telemetry.settings import TelemetrySettings
from tests.conftest import REPO

DEMO = bundled_telemetry(REPO)
DEMO_CLOCK = parse_instant(DEMO.clock or "", 0)
T0 = 1661145489.0  # 2022-08-22 05:18:09, the Nezha fault with logs


def _tools(settings: TelemetrySettings, as_of: float, start: float | None = None) -> dict[str, Tool]:
    return {t.name: t for t in tool_factory(settings, load_skills())(RunScope(as_of, start, None))}


async def test_demo_ranking_logs_and_metrics() -> None:
    tools = _tools(DEMO, DEMO_CLOCK)
    ranked = await tools["rank_anomalies"].run({})
    assert ranked.status == "success" and ranked.output["ranking"][0]["service"] == "payment-service"
    assert ranked.output["evidence"][0]["key"] == "anomaly:payment-service:2026-11-30T09:45Z"
    logs = await tools["query_logs"].run({"service": "payment-service", "contains": "connection is not available"})
    assert logs.status == "success" and logs.output["total_lines"] == 16
    tpl = logs.output["templates"][0]
    assert tpl["status"] == "new" and tpl["count"] == 16 and "Connection is not available" in tpl["template"]
    assert logs.output["evidence"][0]["key"] == f"logtpl:payment-service:{tpl['id']}"
    errors = await tools["query_logs"].run({"service": "payment-service", "level": "error"})
    assert errors.output["matches"] and all(m["level"] == "ERROR" for m in errors.output["matches"])
    assert len(errors.output["matches"]) <= MAX_LOG_LINES
    assert (await tools["query_logs"].run({"service": "payment-service", "contains": "kafka"})).status == "no_data"
    missing = await tools["query_logs"].run({"service": "nope"})
    assert missing.status == "no_data" and "payment-service" in missing.output["services"]
    active = await tools["query_metrics"].run({"service": "payment-service", "signal": "hikaricp_connections_active"})
    sig = active.output["signals"][0]
    assert sig["peak"] == 20.0 and sig["since"] == "2026-11-30T10:00Z" and len(sig["series"]) <= MAX_SERIES_POINTS
    assert (await tools["query_metrics"].run({"service": "payment-service", "signal": "nope"})).status == "no_data"
    # Before the incident the same tools see a calm service: the clock decides what exists.
    calm = _tools(DEMO, DEMO_CLOCK - 20 * 60)
    assert (
        await calm["query_logs"].run({"service": "payment-service", "contains": "not available"})
    ).status == "no_data"


async def test_tools_on_the_nezha_day(nezha_day: Path) -> None:
    settings = TelemetrySettings(log_roots=[], metric_roots=[], nezha_days=[str(nezha_day)])
    tools = _tools(settings, T0 + 300, T0 - 9)
    ranked = await tools["rank_anomalies"].run({})
    assert ranked.output["ranking"][0]["service"] == "currencyservice" and len(ranked.output["ranking"]) <= MAX_RANKED
    logs = await tools["query_logs"].run({"service": "currencyservice"})
    assert logs.status == "success" and len(logs.output["matches"]) == MAX_LOG_LINES
    assert len(logs.output["templates"]) <= MAX_TEMPLATES and logs.output["baseline_note"]
    assert max(m["ts"] for m in logs.output["matches"]) <= "2022-08-22T05:23:09Z"
    deps = await tools["service_dependencies"].run({"service": "currencyservice"})
    assert deps.output["callers"] == ["checkoutservice", "frontend"] and deps.output["callees"] == []
    metrics = await tools["query_metrics"].run({"service": "currencyservice", "start": "2022-08-22T05:18:00Z"})
    assert metrics.output["signals"][0]["deviation"] > 10
    bad = await tools["query_metrics"].run({"service": "currencyservice", "start": "the day before"})
    assert bad.status == "error" and "cannot read time" in bad.output["error"]


async def test_loghub_and_nab_files_from_shared_data(shared_dir: Path) -> None:
    data = shared_dir / "data"
    settings = TelemetrySettings(log_roots=[str(data / "loghub-2k")], metric_roots=[str(data / "nab-metrics" / "data")])
    tools = _tools(settings, parse_instant("2009-01-01T00:00:00Z", 0), parse_instant("2008-11-01T00:00:00Z", 0))
    hdfs = await tools["query_logs"].run(
        {"service": "hdfs", "contains": "PacketResponder terminating", "level": "INFO"}
    )
    assert hdfs.status == "success" and all(m["level"] == "INFO" for m in hdfs.output["matches"])
    nab = _tools(settings, parse_instant("2014-04-20T00:00:00Z", 0))
    listing = await nab["query_metrics"].run({"service": "realAWSCloudwatch"})
    assert listing.status == "success" and listing.output["signals"]


async def test_skills_load_and_read() -> None:
    skills = load_skills()
    assert "db-connection-pool-exhaustion" in skills and all(s.description for s in skills.values())
    tool = ReadSkillTool(skills)
    got = await tool.run({"name": "db-connection-pool-exhaustion"})
    assert got.status == "success" and "hikaricp_connections_active" in got.output["content"]
    assert (await tool.run({"name": "nope"})).status == "no_data"


async def test_current_time_is_the_run_clock() -> None:
    result = await CurrentTimeTool(lambda: DEMO_CLOCK).run({})
    assert result.status == "success" and result.output["utc_now"] == "2026-11-30T10:15:00Z"


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


async def test_weak_leads_when_nothing_crosses_the_threshold(nezha_day: Path) -> None:
    """The 04:18 fault follows three faults of the same pod: no signal crosses the threshold, so the
    ranking shows its strongest deviations marked weak instead of answering nothing."""
    t0 = 1661141915.0  # 2022-08-22 04:18:35
    settings = TelemetrySettings(log_roots=[], metric_roots=[], nezha_days=[str(nezha_day)])
    ranked = await _tools(settings, t0 + 300, t0 - t0 % 60)["rank_anomalies"].run({})
    entries = ranked.output["ranking"]
    assert ranked.status == "success" and ranked.output["note"] and 0 < len(entries) <= 3
    assert not any(e["anomalous"] for e in entries)
    assert all("weak" in e["text"] for e in ranked.output["evidence"])
    strong = await _tools(settings, T0 + 300, T0 - 9)["rank_anomalies"].run({})
    assert strong.output["ranking"][0]["anomalous"] and "note" not in strong.output
