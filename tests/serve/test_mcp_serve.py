"""The MCP endpoint through Ray Serve: the SDK's client against the scripted-profile app (real ingress,
embedder, Milvus Lite search, audit writer), `diagnose` then `get_trace` on the run it made, and
`search_runbooks` over the bundled runbooks."""

from __future__ import annotations

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.slow


async def test_diagnose_then_replay_its_trace_over_mcp(scripted_app: dict[str, str]) -> None:
    url = scripted_app["base"] + "/mcp"
    headers = {"Authorization": f"Bearer {scripted_app['key']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        done = await session.call_tool(
            "diagnose", {"question": "HikariCP connection pool exhausted, requests time out"}
        )
        assert not done.is_error, done
        report = done.structured_content
        trace = await session.call_tool("get_trace", {"session_id": report["sessionId"], "run_id": report["runId"]})
        found = await session.call_tool("search_runbooks", {"query": "HikariCP connection pool exhausted"})
    assert report["content"]["content_type"] == "DIAGNOSIS_REPORT"
    assert not trace.is_error, trace
    summary = trace.structured_content
    assert summary["run"]["run_id"] == report["runId"] and summary["run"]["status"] == "SUCCEEDED"
    # The trace may still be in flight to the writer; what is stored never exceeds what the run emitted.
    assert (
        summary["summary"]["emitted"]["tool_invocations"] == len(summary["tools"]) or not summary["summary"]["complete"]
    )
    blocks = found.structured_content["evidence"]
    assert blocks and any("hikari" in b["key"].lower() for b in blocks)
