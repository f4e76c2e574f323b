"""raydiag as an MCP server at ``/mcp`` on the service's port (streamable HTTP, the official ``mcp`` SDK).

Tools: ``diagnose`` (a question, optionally a session → the released report, with the run's progress as
MCP progress notifications and a heartbeat between them), ``list_runs`` (a session → its runs),
``get_trace`` (a session and optionally a run, the latest by default → its trace summary) and
``search_runbooks`` (a query → the evidence blocks lookup_knowledge would give the agent, in the query's
language first). Every argument is described, every result has an output schema, and the read-only
tools say so (``readOnlyHint``). Stateless (``stateless_http``): no MCP
session lives in a replica, so any ingress replica answers any request. ``/mcp`` sits behind the same
API-key middleware as ``/api/*`` (the tenant comes from the key) and ``diagnose`` behind the same
admission limits as a chat; the runs are ordinary audited runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from starlette.routing import BaseRoute, Route

from deployments.admission import Admission
from deployments.api_schemas import RunList, RunSummary
from deployments.errors import error_bytes
from deployments.provenance import package_version
from harness.contracts import ChatRequest, event_data
from rag.script import cjk_share

RunChat = Callable[..., Any]

# A diagnosis on CPU runs for tens of seconds to minutes; TypeScript-SDK clients give up on a request
# after 60 s unless progress arrives (resetTimeoutOnProgress). A run's own status events can be further
# apart than that while the model writes, so a heartbeat keeps the call alive in between.
HEARTBEAT_S = 15.0
TRACE_WAIT_S = 10.0  # as the trace API's waitMs: records batched on their way to the writer arrive
SessionArg = Annotated[
    str, Field(pattern=r"^[A-Za-z0-9_.:\-]{1,64}$", description="The session id (`sessionId` from `diagnose`)")
]


class DiagnoseResult(BaseModel):
    sessionId: str | None = Field(default=None, description="The session: pass it again for a follow-up question")
    runId: str | None = Field(default=None, description="This run: its audit trail is `get_trace(sessionId, runId)`")
    outcome: str | None = Field(default=None, description="SUCCESS, FALLBACK, FAILED or ABORTED (the stream's done)")
    content: dict[str, Any] | None = Field(
        default=None,
        description="The released answer: content_type (DIAGNOSIS_REPORT, SAFE_FALLBACK, CHAT_ANSWER) and payload",
    )
    failure: dict[str, Any] | None = Field(default=None, description="error_code and message, when the run failed")


class ToolCallSummary(BaseModel):
    tool_call_id: str | None = None
    tool_name: str | None = None
    success: bool | None = None
    status: str | None = None
    duration_ms: int | None = None


class TraceSummary(BaseModel):
    run: dict[str, Any] = Field(description="run_id, session_id, status, release_outcome, query, tokens, duration")
    summary: dict[str, Any] | None = Field(default=None, description="Counts, and whether the trail is complete")
    tools: list[ToolCallSummary] = Field(description="Every tool call of the run, in order")


class EvidenceBlock(BaseModel):
    model_config = {"extra": "allow"}
    key: str = Field(description="The block's citation key (doc#chunk)")
    title: str | None = None
    text: str


class SearchResult(BaseModel):
    relevance_level: str | None = Field(default=None, description="high, medium, low or none")
    completeness_hint: str | None = None
    evidence: list[EvidenceBlock] = Field(description="Blocks in the question's language first, then by rank")


def _tenant(ctx: Context) -> str | None:
    """The tenant the API-key middleware put on the HTTP request this tool call came in."""
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    return (scope.get("state") or {}).get("tenant")


def same_language_first(query: str, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Blocks written in the query's script (Chinese or not) first, each group in rank order: an English
    search of a bilingual knowledge base should not open on Chinese runbooks that rank as well."""
    chinese = cjk_share(query) >= 0.5
    return sorted(blocks, key=lambda b: (cjk_share(str(b.get("text", ""))) >= 0.5) != chinese)


class _Progress:
    """MCP progress notifications for one call: the count rises with every one (the spec wants it to
    increase), status events and heartbeats alike."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.sent = 0
        self.stage = "started"

    async def report(self, message: str) -> None:
        self.sent += 1
        await self.ctx.report_progress(self.sent, None, message)

    async def heartbeat(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            await self.report(f"still working ({self.stage})")


def build_mcp(
    run_chat: RunChat,
    audit: Any,
    lookup: Any,
    admission: Admission,
    flush: Callable[[], Awaitable[bool]] | None = None,
    heartbeat_s: float = HEARTBEAT_S,
    stopping: Callable[[], bool] = lambda: False,
) -> MCPServer[Any]:
    """``stopping``: this replica is draining (deployments/stopping.py): ``diagnose`` starts no run, as
    /api/chat answers 503 then."""
    server: MCPServer[Any] = MCPServer(
        name="raydiag",
        version=package_version(),
        instructions="Evidence-grounded incident diagnosis: ask `diagnose` about an incident in Chinese or "
        "English; every claim of its report cites a tool call you can replay with `get_trace`. `list_runs` "
        "lists a session's runs; `search_runbooks` searches the runbooks without diagnosing.",
    )

    @server.tool(
        title="Diagnose an incident",
        description="Diagnose an incident from its telemetry and runbooks: the released DIAGNOSIS_REPORT (or "
        "SAFE_FALLBACK / chat answer). Long-running: tens of seconds to minutes; progress is notified for "
        f"every stage and at least every {HEARTBEAT_S:.0f} s.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    async def diagnose(
        question: Annotated[str, Field(description="The incident question, in Chinese or English")],
        ctx: Context,
        session_id: Annotated[
            str | None, Field(description="A session to continue (its earlier turns are context); new if omitted")
        ] = None,
    ) -> DiagnoseResult:
        tenant = _tenant(ctx)
        try:
            request = ChatRequest(Id=session_id or f"mcp-{uuid.uuid4().hex[:16]}", Question=question)
        except ValueError as err:
            raise ToolError(f"invalid request: {err}") from err
        if stopping():
            raise ToolError("SERVICE_STOPPING: the service is stopping; no new diagnosis starts here — retry shortly")
        ticket, reason = await admission.admit(tenant)
        if ticket is None:
            raise ToolError(f"TOO_MANY_RUNS: {reason}")
        admission.start(ticket)
        out = DiagnoseResult()
        progress = _Progress(ctx)
        beat = asyncio.create_task(progress.heartbeat(heartbeat_s))
        try:
            async with contextlib.aclosing(run_chat(request, tenant)) as events:
                async for event in events:
                    data = event_data(event)
                    if event.event == "metadata":
                        out.sessionId, out.runId = data["session_id"], data["run_id"]
                    elif event.event == "status":
                        progress.stage = str(data.get("code"))
                        await progress.report(f"{data.get('code')}: {data.get('detail', '')}")
                    elif event.event == "content":
                        out.content = data
                    elif event.event == "failure":
                        out.failure = data
                    elif event.event == "done":
                        out.outcome = data.get("outcome")
        finally:
            beat.cancel()
            await admission.release(ticket)
        return out

    @server.tool(
        title="List a session's runs",
        description="The runs of one session, newest first (ids for `get_trace`)",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    )
    async def list_runs(session_id: SessionArg, ctx: Context) -> RunList:
        if flush is not None:
            await flush()
        reply = await audit.runs(session_id, _tenant(ctx))
        return RunList(session_id=session_id, runs=[RunSummary(**r) for r in reply.get("value", [])])

    @server.tool(
        title="Replay a run's audit trail",
        description="The audit trail summary of one run: its status, tokens and every tool call",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    )
    async def get_trace(
        session_id: SessionArg,
        ctx: Context,
        run_id: Annotated[
            str | None,
            Field(pattern=r"^[A-Za-z0-9_.:\-]{1,64}$", description="A run of that session; the latest if omitted"),
        ] = None,
    ) -> TraceSummary:
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
        return TraceSummary(
            run={k: run.get(k) for k in keep},
            summary=trace.get("summary"),
            tools=[
                ToolCallSummary(**{k: t.get(k) for k in ToolCallSummary.model_fields})
                for t in trace.get("toolInvocations", [])
            ],
        )

    @server.tool(
        title="Search the runbooks",
        description="Search the runbooks: the evidence blocks (key, title, text) a diagnosis would see",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    )
    async def search_runbooks(
        query: Annotated[str, Field(min_length=1, max_length=2000, description="What to look for, any language")],
    ) -> SearchResult:
        if lookup is None:
            raise ToolError("no knowledge base is configured")
        outcome = await lookup.lookup(query, f"mcp_{uuid.uuid4().hex[:12]}")
        if outcome.evidence_status == "ERROR":
            raise ToolError(outcome.error or "knowledge search unavailable")
        view = outcome.agent_view
        return SearchResult(
            relevance_level=outcome.relevance_level,
            completeness_hint=view.get("completeness_hint"),
            evidence=[EvidenceBlock(**b) for b in same_language_first(query, list(view.get("evidence", [])))],
        )

    return server


class PostOnly:
    """The endpoint answers POST only. Stateless, the server never sends anything on a GET's standalone
    stream, which would stay open for ever (a connection held per request); the MCP spec lets a server
    answer such a GET, and a DELETE of a session it never made, with 405."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("method") != "POST":
            body = error_bytes(405, "METHOD_NOT_ALLOWED", "the MCP endpoint takes POST (streamable HTTP, stateless)")
            headers = [(b"content-type", b"application/json"), (b"allow", b"POST")]
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


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
    return [Route(r.path, PostOnly(r.app)) if isinstance(r, Route) else r for r in app.routes]


async def hold_open(server: MCPServer[Any], stop: asyncio.Event) -> None:
    """Keep the session manager's context open until ``stop`` is set (the replica's life)."""
    async with server.session_manager.run():
        await stop.wait()
