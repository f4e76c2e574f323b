"""The MCP endpoint (/mcp, deployments/mcp_server.py) spoken to by the SDK's own client over real HTTP:
the service's app served by uvicorn on 127.0.0.1, the real pipeline behind it (scripted model), the
lookup a neighbour. Tools are listed, `diagnose` streams progress and returns the released report,
`search_runbooks` returns evidence blocks, a missing key is refused and the admission limit applies.
The serve tier repeats the round trip through Ray Serve with the real audit trail (tests/serve)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from deployments.admission import Admission
from deployments.http_api import create_api
from deployments.limits import RunLimiter
from deployments.mcp_server import build_mcp, hold_open, mcp_routes
from harness.rules_model import RulesModel
from harness.settings import HarnessSettings
from harness.wiring import build_pipeline, bundled_telemetry
from tests.conftest import REPO
from tests.fakes.sinks import ListSink
from tests.fakes.slow_pipeline import PacedPipeline
from tests.harness.test_rules_model import OneRunbook
from tests.unit.test_trace_wait import ArrivingAudit

KEY = "mcp-key-1234"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RunsAudit(ArrivingAudit):
    """The audit backend as a neighbour with one session's two runs on record."""

    async def runs(self, session_id: str, tenant_id: str | None) -> dict[str, Any]:
        rows = [
            {"run_id": "r2", "status": "SUCCEEDED", "release_outcome": "SUCCESS", "query": "q2"},
            {"run_id": "r1", "status": "SUCCEEDED", "release_outcome": "FALLBACK", "query": "q1"},
        ]
        return {"ok": True, "value": rows if session_id == "s1" else []}

    async def trace(self, session_id: str, run_id: str | None, tenant_id: str | None) -> dict[str, Any]:
        run = {"run_id": run_id or "r2", "session_id": session_id, "status": "SUCCEEDED"}  # latest by default
        tools = [{"tool_call_id": "t1", "tool_name": "query_metrics", "success": True, "duration_ms": 40}]
        return {"ok": True, "value": {"run": run, "summary": {"complete": True}, "toolInvocations": tools}}


class TwoLanguages(OneRunbook):
    """A lookup whose best block is Chinese and second English (a bilingual knowledge base)."""

    async def lookup(self, query: str, tool_call_id: str, domain: str | None = None) -> Any:
        outcome = await super().lookup(query, tool_call_id, domain)
        english = outcome.agent_view["evidence"][0]
        chinese = {
            **english,
            "key": "hikaricp-zh#chunk-0",
            "text": "连接池耗尽：请求等待连接超时，检查最大连接数和连接泄漏。",
        }
        outcome.agent_view["evidence"] = [chinese, english]
        return outcome


@pytest.fixture
async def service(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, Any]]:
    heartbeat_s, pace_s = getattr(request, "param", (15.0, PacedPipeline.delay_s))
    draining = [False]
    paced = type("Paced", (PacedPipeline,), {"delay_s": pace_s})
    sink = ListSink()
    limiter = RunLimiter(8, 1)  # one run in flight per tenant
    pipeline = build_pipeline(
        sink, HarnessSettings(), bundled_telemetry(REPO), RulesModel(), OneRunbook(True), pipeline_cls=paced
    )

    async def flush() -> bool:
        return True

    app = create_api(
        pipeline.run, ArrivingAudit(1), lambda r: None, flush, 65536, api_keys={"team-a": KEY}, limiter=limiter
    )
    server = build_mcp(
        pipeline.run,
        RunsAudit(1),
        TwoLanguages(True),
        Admission(limiter),
        heartbeat_s=heartbeat_s,
        stopping=lambda: draining[0],
    )
    app.router.routes.extend(mcp_routes(server))
    stop = asyncio.Event()
    holder = asyncio.create_task(hold_open(server, stop))
    port = _port()
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(http.serve())
    for _ in range(200):
        if http.started:
            break
        await asyncio.sleep(0.05)
    try:
        yield {"url": f"http://127.0.0.1:{port}/mcp", "sink": sink, "draining": draining}
    finally:
        http.should_exit = True
        await serving
        stop.set()
        await holder


@contextlib.asynccontextmanager
async def connected(url: str, key: str = KEY) -> AsyncIterator[ClientSession]:
    """The SDK's client session over streamable HTTP, with the API key, initialised."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_the_sdk_client_lists_the_tools_and_diagnoses_with_progress(service: dict[str, Any]) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    async with connected(service["url"]) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert names == {"diagnose", "list_runs", "get_trace", "search_runbooks"}
        result = await session.call_tool(
            "diagnose",
            {"question": "HikariCP connection pool exhausted, requests time out", "session_id": "mcp-s1"},
            progress_callback=on_progress,
        )
        assert not result.is_error, result
        report = result.structured_content
        search = await session.call_tool("search_runbooks", {"query": "HikariCP pool exhausted"})
    # The deterministic rules model on the demo incident: a report, the one outcome it produces.
    assert report["sessionId"] == "mcp-s1" and report["outcome"] == "SUCCESS"
    assert report["content"]["content_type"] == "DIAGNOSIS_REPORT"
    # A reader can tell this answer is about the bundled synthetic incident, written by the rules model.
    scope = report["content"]["payload"]["report"]["limitations"]["scope"]
    assert scope.endswith(
        "; telemetry: the bundled demo incident (synthetic); model: scripted (rules, no language model)"
    ), scope
    # The run is an ordinary audited run of team-a (the key's tenant).
    started = next(r for r in service["sink"].records if r.kind == "run_started" and r.run_id == report["runId"])
    assert started.data["tenant_id"] == "team-a"
    # Progress: one notification per status event of the run (ROUTING, PLANNING, …), in order.
    assert len(progress) >= 2 and [p[0] for p in progress] == list(range(1, len(progress) + 1))
    assert progress[0][1] is not None and progress[0][1].startswith("ROUTING")
    # An English query: the English block first, though the lookup ranked the Chinese one above it.
    assert [b["key"] for b in search.structured_content["evidence"]] == ["hikaricp#chunk-0", "hikaricp-zh#chunk-0"]


async def test_tools_describe_their_arguments_results_and_effects(service: dict[str, Any]) -> None:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as http,
        streamable_http_client(service["url"], http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
    from importlib import metadata

    assert init.server_info.name == "raydiag" and init.server_info.version == metadata.version("raydiag")
    for tool in tools.values():
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
        assert tool.output_schema and tool.output_schema.get("properties"), tool.name
        assert tool.annotations is not None and tool.title
    read_only = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint}
    assert read_only == {"list_runs", "get_trace", "search_runbooks"}
    assert tools["diagnose"].annotations.destructive_hint is False  # type: ignore[union-attr]
    assert set(tools["diagnose"].output_schema["properties"]) == {"sessionId", "runId", "outcome", "content", "failure"}  # type: ignore[index]
    assert tools["get_trace"].input_schema["required"] == ["session_id"]  # the run is optional: latest


async def test_list_runs_then_the_latest_trace_without_a_run_id(service: dict[str, Any]) -> None:
    async with connected(service["url"]) as session:
        runs = await session.call_tool("list_runs", {"session_id": "s1"})
        latest = await session.call_tool("get_trace", {"session_id": "s1"})
        named = await session.call_tool("get_trace", {"session_id": "s1", "run_id": "r1"})
        bad = await session.call_tool("get_trace", {"session_id": "s1; DROP TABLE"})
    assert [r["run_id"] for r in runs.structured_content["runs"]] == ["r2", "r1"]
    assert latest.structured_content["run"]["run_id"] == "r2" and named.structured_content["run"]["run_id"] == "r1"
    assert latest.structured_content["tools"][0]["tool_name"] == "query_metrics"
    assert bad.is_error  # the id's pattern is checked before any lookup


@pytest.mark.parametrize("service", [(0.05, PacedPipeline.delay_s)], indirect=True)
async def test_a_heartbeat_between_stages_keeps_progress_rising(service: dict[str, Any]) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    async with connected(service["url"]) as session:
        result = await session.call_tool(
            "diagnose", {"question": "HikariCP connection pool exhausted"}, progress_callback=on_progress
        )
    assert not result.is_error
    beats = [m for _, m in progress if m and m.startswith("still working (")]
    assert beats and len(beats) < len(progress)  # heartbeats between the stages' own notifications
    assert [p[0] for p in progress] == list(range(1, len(progress) + 1))  # rising, as the spec wants


async def test_without_a_key_the_endpoint_refuses(service: dict[str, Any]) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        r = await http.post(service["url"], json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401


async def test_diagnose_is_admitted_like_a_chat(service: dict[str, Any]) -> None:
    async with connected(service["url"]) as session:
        question = {"question": "orders-db replication lag above 30 s"}
        first = asyncio.create_task(session.call_tool("diagnose", question))
        await asyncio.sleep(0.5)  # the paced run holds team-a's one slot
        refused = await session.call_tool("diagnose", question)
        assert refused.is_error and "TOO_MANY_RUNS" in str(refused.content)
        assert not (await first).is_error


async def test_only_post_is_served(service: dict[str, Any]) -> None:
    """Stateless, a GET's standalone stream would never carry anything and never end: 405 instead."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=10) as http:
        got = await http.get(service["url"], headers={"Accept": "text/event-stream"})
        deleted = await http.delete(service["url"])
    assert got.status_code == deleted.status_code == 405 and got.headers["allow"] == "POST"


@pytest.mark.parametrize("service", [(15.0, 6.0)], indirect=True)
async def test_a_diagnosis_longer_than_a_minute_keeps_the_client_informed(service: dict[str, Any]) -> None:
    """A run paced to outlast 60 s (a 0.5B on CPU takes that long): the call returns the report, and no
    60 s passes without a notification — what a client resetting its timeout on progress needs (the
    TypeScript SDK's resetTimeoutOnProgress; the Python SDK's default waits without a limit)."""
    seen: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(asyncio.get_running_loop().time())

    async with connected(service["url"]) as session:
        start = asyncio.get_running_loop().time()
        result = await session.call_tool(
            "diagnose", {"question": "HikariCP connection pool exhausted"}, progress_callback=on_progress
        )
        took = asyncio.get_running_loop().time() - start
    assert not result.is_error and result.structured_content["outcome"] == "SUCCESS"
    assert took > 60
    gaps = [b - a for a, b in zip([start, *seen], [*seen, start + took], strict=True)]
    assert max(gaps) < 20, gaps  # a stage's notification or a heartbeat at least every 15 s


async def test_a_draining_replica_starts_no_diagnosis(service: dict[str, Any]) -> None:
    service["draining"][0] = True
    async with connected(service["url"]) as session:
        refused = await session.call_tool("diagnose", {"question": "HikariCP connection pool exhausted"})
        search = await session.call_tool("search_runbooks", {"query": "HikariCP"})  # reads still answer
    assert refused.is_error and "SERVICE_STOPPING" in str(refused.content)
    assert not search.is_error
    assert not [r for r in service["sink"].records if r.kind == "run_started"]
