"""The HTTP API served by the ingress: chat over SSE, trace replay, feedback, health.

Errors before a stream starts are JSON ``{"error": {"code", "message"}}`` with a 4xx/5xx status;
once a stream has started, errors are ``failure`` events followed by ``done``.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypeVar

from fastapi import FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from audit.records import AuditRecord
from deployments.admission import Admission, ClusterTenantCap
from deployments.alerts import AlertDedupe, LocalAlertDedupe, add_alert_routes
from deployments.api_docs import add_docs_page, complete_openapi, request_body
from deployments.api_schemas import FeedbackStored, Liveness, Readiness, RunList, Trace
from deployments.auth import ApiKeyMiddleware
from deployments.body_limit import BodyLimit, BodyTooLarge
from deployments.config import AlertSettings
from deployments.errors import error
from deployments.head_requests import HeadAsGet
from deployments.limits import RunLimiter
from deployments.provenance import package_version
from deployments.sse import frame_event
from harness.contracts import ChatRequest, SseEvent

log = logging.getLogger(__name__)

BodyT = TypeVar("BodyT", bound=BaseModel)
# Session ids follow ChatRequest.Id's rule; anything else is a 422, never a database lookup.
ID_PATTERN = r"^[A-Za-z0-9_.:\-]{1,64}$"
SessionId = Annotated[str, PathParam(pattern=ID_PATTERN, description="The chat session (the Id of /api/chat)")]
RunId = Annotated[str | None, Query(pattern=ID_PATTERN, description="A run of that session; latest if omitted")]
WaitMs = Annotated[
    int,
    Query(
        ge=0,
        le=10_000,
        description="Wait up to this long for the run's trail to be complete (records still buffered in "
        "another ingress replica or in the writer's queue); the reply's summary.complete says whether it is.",
    ),
]
TRACE_POLL_S = 0.1
PROBE_TIMEOUT_S = 2.0


class AuditBackend(Protocol):
    """What the API needs from the audit deployment (a Ray handle adapter in production)."""

    async def trace(self, session_id: str, run_id: str | None, tenant_id: str | None) -> dict[str, Any]: ...
    async def reasoning(self, session_id: str, run_id: str | None, tenant_id: str | None) -> dict[str, Any]: ...
    async def runs(self, session_id: str, tenant_id: str | None) -> dict[str, Any]: ...
    async def run_exists(self, session_id: str, run_id: str, tenant_id: str | None) -> bool: ...
    async def health(self) -> dict[str, Any]: ...


class FeedbackRequest(BaseModel):
    model_config = {"extra": "forbid"}

    runId: str = Field(min_length=1, max_length=64)
    rating: Literal["up", "down"]
    comment: str = Field(default="", max_length=2000)


def _validation_message(err: ValidationError | RequestValidationError) -> str:
    parts = []
    for item in err.errors():
        where = ".".join(str(p) for p in item.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {item.get('msg')}")
    return "; ".join(parts)


# JSON nested past the interpreter's stack (json.loads raises RecursionError): bad input, never a crash.
TOO_DEEP = "the body's JSON is nested too deeply"
CONSOLE = Path(__file__).parent / "console"
CONSOLE_ASSETS = {"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8"}
# The console loads only its own files: no inline script or style, nothing from another origin.
CONSOLE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


# What the unauthenticated readiness page shows of the audit writer: its state and counters, never a
# file path or an error text (a database error can name hosts and users).
PUBLIC_AUDIT = ("state", "written", "pending", "spilled", "dead_lettered", "dialect")


def _public(health: dict[str, Any]) -> dict[str, Any]:
    return {k: health[k] for k in PUBLIC_AUDIT if k in health}


def _complete(result: dict[str, Any]) -> bool:
    return bool(result["value"].get("summary", {}).get("complete", True))


def tenant_of(request: Request) -> str | None:
    """The tenant ApiKeyMiddleware authenticated (None when authentication is off)."""
    return getattr(request.state, "tenant", None)


def add_console_routes(app: FastAPI) -> None:
    """The web console: one static page (chat, trace view, run list) routed in the browser."""

    async def page(request: Request) -> Response:
        # Mounted under a route prefix (Serve's root_path), the page's links and API calls carry it.
        base = html.escape(str(request.scope.get("root_path", "")).rstrip("/"), quote=True)
        text = (CONSOLE / "index.html").read_text(encoding="utf-8").replace("{{BASE}}", base)
        return Response(text, media_type="text/html; charset=utf-8", headers=CONSOLE_HEADERS)

    for path in ("/", "/runs", "/runs/{sessionId}/{runId}"):
        app.add_api_route(path, page, methods=["GET"], include_in_schema=False)

    @app.get("/console/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        if name not in CONSOLE_ASSETS:  # a fixed list: no path ever reaches the file system
            return error(404, "NOT_FOUND", f"no console asset {name!r}")
        return Response((CONSOLE / name).read_bytes(), media_type=CONSOLE_ASSETS[name], headers=CONSOLE_HEADERS)


RunChat = Callable[..., AsyncGenerator[SseEvent, None]]  # (request, tenant[, run options])

REPLICA_HEADER = b"x-raydiag-replica"


class ReplicaHeader:
    """Names the ingress replica that answered in every response (``X-Raydiag-Replica``): with N
    replicas behind one proxy, an operator (and a test) can tell which process served a request.
    Plain ASGI, so streamed responses pass through untouched."""

    def __init__(self, app: Any, replica: str) -> None:
        self.app = app
        self.value = replica.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def tagged(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (REPLICA_HEADER, self.value)]}
            await send(message)

        await self.app(scope, receive, tagged)


def create_api(
    run_chat: RunChat,
    audit: AuditBackend,
    emit_record: Callable[[AuditRecord], None],
    flush_audit: Callable[[], Awaitable[bool]],
    max_body_bytes: int,
    api_keys: dict[str, str] | None = None,
    limiter: RunLimiter | None = None,
    retry_after_s: int = 2,
    stopping: Callable[[], bool] = lambda: False,
    probes: dict[str, Callable[[], Awaitable[dict[str, Any]]]] | None = None,
    cluster_cap: ClusterTenantCap | None = None,
    replica: str | None = None,
    alerts: AlertSettings | None = None,
    alert_dedupe: AlertDedupe | None = None,
    max_openai_body_bytes: int = 1024 * 1024,
) -> FastAPI:
    """``max_openai_body_bytes``: the body cap of the /v1 routes (deployments/body_limit.py).
    ``alerts``: serve POST /api/alerts (deployments/alerts.py), deduplicated by ``alert_dedupe``.
    ``replica``: this ingress replica's id, sent back as ``X-Raydiag-Replica``. ``probes``: the
    deployments a chat needs (llm, embedder, search), each a cheap call that answers only when a
    replica serves; /healthz is 503 until every one does. ``cluster_cap``: the tenant cap counted
    across every ingress replica (deployments/admission.py)."""
    admission = Admission(limiter, cluster_cap)
    app = FastAPI(
        title="raydiag",
        version=package_version(),
        description="Evidence-grounded incident diagnosis. Chat streams Server-Sent Events.",
        docs_url=None,  # add_docs_page: Swagger UI from this app, not a CDN
        redoc_url=None,
    )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_req: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI answers what its own body reading raised with a bare 400: say what it was.
        if isinstance(exc.__cause__, BodyTooLarge):
            return error(413, "BODY_TOO_LARGE", str(exc.__cause__))
        if isinstance(exc.__cause__, RecursionError):
            return error(400, "INVALID_JSON", TOO_DEEP)
        code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(exc.status_code, "HTTP_ERROR")
        return error(exc.status_code, code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_req: Request, exc: RequestValidationError) -> JSONResponse:
        return error(422, "INVALID_REQUEST", _validation_message(exc))

    @app.exception_handler(Exception)
    async def _unexpected(_req: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, ClientDisconnect):  # the client left mid-response: not a crash of ours
            log.info("client disconnected before the response was sent")
            return error(499, "CLIENT_DISCONNECTED", "the client went away")
        log.exception("unhandled error")
        return error(500, "INTERNAL", "internal error")

    async def read_json(request: Request) -> Any | JSONResponse:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            return error(415, "UNSUPPORTED_MEDIA_TYPE", "send the body as application/json")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
            return error(413, "BODY_TOO_LARGE", f"the body is larger than {max_body_bytes} bytes")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_body_bytes:
                return error(413, "BODY_TOO_LARGE", f"the body is larger than {max_body_bytes} bytes")
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return error(400, "INVALID_JSON", "the body is not valid JSON")
        except RecursionError:  # 10 KB of "[[[[…"
            return error(400, "INVALID_JSON", TOO_DEEP)

    async def parse_body(request: Request, model: type[BodyT]) -> BodyT | JSONResponse:
        data = await read_json(request)
        if isinstance(data, JSONResponse):
            return data
        try:
            return model.model_validate(data)
        except ValidationError as err:
            return error(422, "INVALID_REQUEST", _validation_message(err))

    @app.post(
        "/api/chat",
        summary="Ask a question; the answer streams as Server-Sent Events",
        response_class=StreamingResponse,
        responses={
            200: {"content": {"text/event-stream": {}}, "description": "metadata, status…, content|failure, done"},
            400: {"description": "not JSON"},
            413: {"description": "body too large"},
            415: {"description": "not application/json"},
            422: {"description": "invalid fields"},
            429: {"description": "too many runs in flight for the service or the tenant (Retry-After)"},
            503: {"description": "the service is stopping gracefully (Retry-After)"},
        },
        openapi_extra=request_body(ChatRequest),
    )
    async def chat(request: Request) -> Any:
        req = await parse_body(request, ChatRequest)
        if isinstance(req, JSONResponse):
            return req
        if stopping():  # a graceful stop is draining this replica (deployments/stopping.py)
            return error(
                503,
                "SERVICE_STOPPING",
                "the service is stopping; no new diagnosis starts here — retry shortly",
                headers={"Retry-After": str(retry_after_s)},
            )
        tenant = tenant_of(request)
        ticket, reason = await admission.admit(tenant)
        if ticket is None:
            return error(429, "TOO_MANY_RUNS", reason, headers={"Retry-After": str(retry_after_s)})

        async def stream() -> AsyncIterator[bytes]:
            n = 0
            admission.start(ticket)
            try:
                # aclosing: on client disconnect the pipeline is closed now (recorded ABORTED), not at GC.
                async with aclosing(run_chat(req, tenant)) as events:
                    async for event in events:
                        n += 1
                        yield frame_event(event, n)
            finally:
                await admission.release(ticket)

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    if alerts is not None and alerts.enabled:
        add_alert_routes(
            app,
            run_chat,
            alerts,
            admission=admission,
            dedupe=alert_dedupe or LocalAlertDedupe(),
            tenant_of=tenant_of,
            parse_body=parse_body,
            error=error,
            stopping=stopping,
            retry_after_s=retry_after_s,
        )

    async def _trace_reply(result: dict[str, Any]) -> JSONResponse:
        if not result.get("ok"):
            return error(404, "NOT_FOUND", str(result.get("error", "not found")))
        return JSONResponse(result["value"])

    @app.get(
        "/api/diagnosis/{sessionId}/trace",
        summary="Replay one run's audit trail",
        responses={200: {"model": Trace}, 404: {"description": "no such session or run"}},
    )
    async def trace(request: Request, sessionId: SessionId, runId: RunId = None, waitMs: WaitMs = 0) -> JSONResponse:
        # This replica's buffer is flushed first; another replica's records arrive on their own
        # batching clock, so a caller that needs the whole trail waits for it, bounded.
        await flush_audit()
        deadline = time.monotonic() + waitMs / 1000
        result = await audit.trace(sessionId, runId, tenant_of(request))
        while waitMs and result.get("ok") and not _complete(result) and time.monotonic() < deadline:
            await asyncio.sleep(TRACE_POLL_S)
            result = await audit.trace(sessionId, runId, tenant_of(request))
        return await _trace_reply(result)

    @app.get(
        "/api/diagnosis/{sessionId}/trace/reasoning",
        summary="Provider reasoning and assistant text",
        responses={404: {"description": "no such session or run"}},
    )
    async def reasoning(request: Request, sessionId: SessionId, runId: RunId = None) -> JSONResponse:
        await flush_audit()
        return await _trace_reply(await audit.reasoning(sessionId, runId, tenant_of(request)))

    @app.get(
        "/api/diagnosis/{sessionId}/runs",
        summary="The session's runs, newest first",
        responses={200: {"model": RunList}},
    )
    async def runs(request: Request, sessionId: SessionId) -> JSONResponse:
        await flush_audit()
        result = await audit.runs(sessionId, tenant_of(request))
        return JSONResponse({"session_id": sessionId, "runs": result.get("value", [])})

    @app.post(
        "/api/diagnosis/{sessionId}/feedback",
        summary="Store the user's feedback on a run",
        status_code=202,
        responses={202: {"model": FeedbackStored, "description": "stored"}, 404: {"description": "no such run"}},
        openapi_extra=request_body(FeedbackRequest),
    )
    async def feedback(sessionId: SessionId, request: Request) -> JSONResponse:
        fb = await parse_body(request, FeedbackRequest)
        if isinstance(fb, JSONResponse):
            return fb
        await flush_audit()
        if not await audit.run_exists(sessionId, fb.runId, tenant_of(request)):
            return error(404, "NOT_FOUND", f"no run {fb.runId} in session {sessionId}")
        emit_record(
            AuditRecord(
                kind="feedback",
                run_id=fb.runId,
                session_id=sessionId,
                ts=time.time(),
                data={"rating": fb.rating, "comment": fb.comment},
            )
        )
        return JSONResponse({"stored": True, "runId": fb.runId}, status_code=202)

    add_console_routes(app)
    add_docs_page(app)
    complete_openapi(app, authenticated=bool(api_keys))
    if api_keys:
        app.add_middleware(ApiKeyMiddleware, keys=api_keys)
    # Outside authentication (which reads no body) and inside the replica header: a /v1 body over the
    # cap is refused before FastAPI parses it.
    app.add_middleware(BodyLimit, limit=max_openai_body_bytes)
    app.add_middleware(HeadAsGet)
    if replica:
        app.add_middleware(ReplicaHeader, replica=replica)  # outermost: refusals carry it too

    async def probe(name: str, check: Callable[[], Awaitable[dict[str, Any]]]) -> tuple[str, dict[str, Any]]:
        try:
            return name, {"state": "ok", **await asyncio.wait_for(check(), PROBE_TIMEOUT_S)}
        except TimeoutError:  # no replica answers yet: still loading (a model), or gone
            return name, {"state": "unavailable", "error": f"no answer within {PROBE_TIMEOUT_S:.0f} s"}
        except Exception as err:
            return name, {"state": "unavailable", "error": type(err).__name__}

    async def readiness() -> JSONResponse:
        if stopping():  # tell load balancers to send nothing more here
            return JSONResponse({"status": "stopping", "components": {"ingress": {"state": "stopping"}}}, 503)
        components: dict[str, Any] = {"ingress": {"state": "ok"}}
        required = dict(await asyncio.gather(*(probe(n, c) for n, c in (probes or {}).items())))
        components.update(required)
        try:
            components["audit"] = _public(await audit.health())
        except Exception as err:
            components["audit"] = {"state": "down", "error": type(err).__name__}
        if any(c["state"] != "ok" for c in required.values()):
            # A chat would fail: a load balancer or a readiness probe must not send one here.
            return JSONResponse({"status": "unavailable", "components": components}, 503)
        # The audit trail spills to disk through an outage, so chats still work: degraded, not down.
        overall = "ok" if all(c.get("state") == "ok" for c in components.values()) else "degraded"
        return JSONResponse({"status": overall, "components": components})

    # /readyz is the name Kubernetes probes use; /healthz stays for what already points at it.
    summary = "Readiness: each component's state; 503 until a chat can be served"
    answers: dict[int | str, Any] = {
        200: {"model": Readiness},
        503: {"model": Readiness, "description": "not ready: a deployment a chat needs does not answer"},
    }
    app.add_api_route("/readyz", readiness, methods=["GET"], summary=summary, responses=answers)
    app.add_api_route("/healthz", readiness, methods=["GET"], summary=summary + " (as /readyz)", responses=answers)

    @app.get(
        "/livez",
        summary="Liveness: the ingress process answers (no other component is asked)",
        responses={200: {"model": Liveness}},
    )
    async def livez() -> JSONResponse:
        return JSONResponse({"status": "alive"})

    return app
