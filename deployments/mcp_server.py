"""raydiag as an MCP server at ``/mcp`` on the service's port (streamable HTTP, the official ``mcp`` SDK).

Tools: ``diagnose`` (a question, optionally a session → the released report, with the run's progress as
MCP progress notifications), ``get_trace`` (a run → its trace summary) and ``search_runbooks`` (a query →
the evidence blocks lookup_knowledge would give the agent). Stateless (``stateless_http``): no MCP
session lives in a replica, so any ingress replica answers any request. ``/mcp`` sits behind the same
API-key middleware as ``/api/*`` (the tenant comes from the key) and ``diagnose`` behind the same
admission limits as a chat; the runs are ordinary audited runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import BaseRoute

from deployments.admission import Admission
from harness.contracts import ChatRequest, event_data

RunChat = Callable[..., Any]


def _tenant(ctx: Context) -> str | None:
    """The tenant the API-key middleware put on the HTTP request this tool call came in."""
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    return (scope.get("state") or {}).get("tenant")


TRACE_WAIT_S = 10.0  # as the trace API's waitMs: records batched on their way to the writer arrive


def build_mcp(
    run_chat: RunChat,
    audit: Any,
    lookup: Any,
    admission: Admission,
    flush: Callable[[], Awaitable[bool]] | None = None,
) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(
        name="raydiag",
        instructions="Evidence-grounded incident diagnosis: ask `diagnose` about an incident in Chinese or "
        "English; every claim of its report cites a tool call you can replay with `get_trace`.",
    )

    @server.tool(description="Diagnose an incident: the released DIAGNOSIS_REPORT (or SAFE_FALLBACK / chat answer)")
    async def diagnose(question: str, ctx: Context, session_id: str | None = None) -> dict[str, Any]:
        tenant = _tenant(ctx)
        try:
            request = ChatRequest(Id=session_id or f"mcp-{uuid.uuid4().hex[:16]}", Question=question)
        except ValueError as err:
            raise ToolError(f"invalid request: {err}") from err
        ticket, reason = await admission.admit(tenant)
        if ticket is None:
            raise ToolError(f"TOO_MANY_RUNS: {reason}")
        admission.start(ticket)
        out: dict[str, Any] = {}
        step = 0
        try:
            async with contextlib.aclosing(run_chat(request, tenant)) as events:
                async for event in events:
                    data = event_data(event)
                    if event.event == "metadata":
                        out.update(sessionId=data["session_id"], runId=data["run_id"])
                    elif event.event == "status":
                        step += 1
                        await ctx.report_progress(step, None, f"{data.get('code')}: {data.get('detail', '')}")
                    elif event.event == "content":
                        out["content"] = data
                    elif event.event == "failure":
                        out["failure"] = data
                    elif event.event == "done":
                        out["outcome"] = data.get("outcome")
        finally:
            await admission.release(ticket)
        return out

    @server.tool(description="The audit trail summary of one run (ids from `diagnose`)")
    async def get_trace(session_id: str, run_id: str, ctx: Context) -> dict[str, Any]:
        if flush is not None:
            await flush()  # this replica's buffered records first
        deadline = asyncio.get_running_loop().time() + TRACE_WAIT_S
        while True:
            reply = await audit.trace(session_id, run_id, _tenant(ctx))
            if not reply.get("ok"):
                raise ToolError(str(reply.get("error", "not found")))
            trace = reply["value"]
            if (trace.get("summary") or {}).get("complete") or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.2)
        run = trace.get("run") or {}
        keep = ("run_id", "session_id", "status", "release_outcome", "query", "total_token_count", "total_duration_ms")
        return {
            "run": {k: run.get(k) for k in keep},
            "summary": trace.get("summary"),
            "tools": [
                {k: t.get(k) for k in ("tool_call_id", "tool_name", "success", "status", "duration_ms")}
                for t in trace.get("toolInvocations", [])
            ],
        }

    @server.tool(description="Search the runbooks: the evidence blocks (key, title, text) a diagnosis would see")
    async def search_runbooks(query: str) -> dict[str, Any]:
        if lookup is None:
            raise ToolError("no knowledge base is configured")
        outcome = await lookup.lookup(query, f"mcp_{uuid.uuid4().hex[:12]}")
        if outcome.evidence_status == "ERROR":
            raise ToolError(outcome.error or "knowledge search unavailable")
        return {"relevance_level": outcome.relevance_level, **outcome.agent_view}

    return server


def mcp_routes(server: MCPServer[Any]) -> list[BaseRoute]:
    """The server's streamable-HTTP endpoint (/mcp) as routes to add to the service's app. The SDK's
    session manager serves them only while ``server.session_manager.run()`` is open (``hold_open``)."""
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=False,  # progress notifications stream as SSE within the call's response
        # API keys guard /mcp as they guard /api; a host-header allow-list would refuse every
        # replica behind a load balancer.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return list(app.routes)


async def hold_open(server: MCPServer[Any], stop: asyncio.Event) -> None:
    """Keep the session manager's context open until ``stop`` is set (the replica's life)."""
    async with server.session_manager.run():
        await stop.wait()
