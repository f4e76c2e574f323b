"""OpenAI-compatible routes on the ingress: ``GET /v1/models``, ``POST /v1/chat/completions`` and
``POST /v1/embeddings`` (deployments/openai_embeddings.py).

What a request may say is deployments/openai_request.py; a refusal is OpenAI's 400 shape with the
parameter named, an unknown model a 404 ``model_not_found``. Tools are honoured through the harness's
own JSON tool calling (harness/json_tools.py): the model is offered the tools in its system prompt and
its ``{"tool_calls": [...]}`` reply becomes OpenAI ``tool_calls``; ``tool_choice`` "required" or a named
function constrains decoding to a call. A completion is admitted by the same limiter as a diagnosis
(429 over a cap, 503 while draining) and audited as a run of its own (agent flow ``OPENAI``:
RUN_STARTED, MODEL_TOKEN_USAGE, RUN_FINISHED, in session ``openai-<tenant>``), so the model's use
through /v1 is counted and traceable like /api/chat.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ValidationError
from ray.serve.handle import DeploymentHandle

from deployments.admission import Admission, ClusterTenantCap
from deployments.api_docs import request_body
from deployments.api_schemas import ChatCompletion, ModelList
from deployments.errors import error
from deployments.http_api import tenant_of
from deployments.limits import RunLimiter
from deployments.openai_embeddings import add_embedding_route
from deployments.openai_request import ChatCompletionRequest, refusal, tool_calls_out
from harness.json_tools import MAX_TOOL_CALLS, flatten_messages, guided_schema, parse_reply, tool_call_schema
from harness.model import ModelResponse
from harness.protocols import AuditSink
from harness.recorder import RunRecorder, Usage

BodyT = TypeVar("BodyT", bound=BaseModel)
TOO_DEEP = "the body's JSON is nested too deeply"


async def read_openai_body(request: Request, model: type[BodyT]) -> BodyT | JSONResponse:
    """The request as ``model``, or OpenAI's 400 naming what is wrong. The body's size is capped before
    this runs (deployments/body_limit.py)."""
    raw = await request.body()
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return error(400, "INVALID_JSON", "the body is not valid JSON")
    except RecursionError:
        return error(400, "INVALID_JSON", TOO_DEEP)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        param, message = refusal(err)
        return error(400, "INVALID_REQUEST", message, param=param)
    except RecursionError:  # a valid document nested past what validation recurses through
        return error(400, "INVALID_REQUEST", TOO_DEEP)


class _NoAudit:
    def emit(self, record: Any) -> None:
        pass


def _recorder(sink: AuditSink | None, req: ChatCompletionRequest, cid: str, tenant: str | None) -> RunRecorder:
    session = f"openai-{tenant or 'anonymous'}"[:64]
    rec = RunRecorder(sink or _NoAudit(), session, cid, req.last_user_text()[:2000], tenant_id=tenant)
    rec.start(agent_flow="OPENAI", **({"end_user": req.user} if req.user else {}))
    return rec


class ModelCheck:
    """The served model's name, asked of the LLM deployment once it answers (it never changes)."""

    def __init__(self, llm: DeploymentHandle) -> None:
        self.llm = llm
        self.names: list[str] = []

    async def served(self) -> list[str]:
        if not self.names:
            self.names = list(await self.llm.models.remote())
        return self.names


def add_openai_routes(
    app: FastAPI,
    llm: DeploymentHandle,
    *,
    embedder: DeploymentHandle | None = None,
    limiter: RunLimiter | None = None,
    cluster_cap: ClusterTenantCap | None = None,
    sink: AuditSink | None = None,
    retry_after_s: int = 2,
    stopping: Callable[[], bool] = lambda: False,
) -> None:
    admission = Admission(limiter, cluster_cap)
    check = ModelCheck(llm)

    @app.get(
        "/v1/models",
        summary="OpenAI-compatible: the served chat model (and the embedding model)",
        responses={200: {"model": ModelList}},
    )
    async def models() -> JSONResponse:
        try:
            names = await check.served()
            if embedder is not None:
                names = [*names, str((await embedder.info.remote())["model"])]
        except Exception:  # a replica still loading, or gone
            return error(503, "UNAVAILABLE", "the models are not serving yet", headers={"Retry-After": "5"})
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": n, "object": "model", "created": 0, "owned_by": "raydiag"} for n in names],
            }
        )

    async def read_request(http: Request, model: type[BodyT]) -> BodyT | JSONResponse:
        """The request as ``model``, or the refusal to send: a 400 naming what is wrong, 503 while stopping."""
        req = await read_openai_body(http, model)
        if stopping() and not isinstance(req, JSONResponse):
            return error(
                503, "SERVICE_STOPPING", "the service is stopping", headers={"Retry-After": str(retry_after_s)}
            )
        return req

    @app.post(
        "/v1/chat/completions",
        summary="OpenAI-compatible chat completions (stream and non-stream, JSON output, tool calls)",
        openapi_extra=request_body(ChatCompletionRequest),
        responses={
            200: {"model": ChatCompletion, "content": {"text/event-stream": {}}},
            400: {"description": "a parameter cannot be honoured (param names it), or the JSON is bad"},
            404: {"description": "model_not_found"},
            429: {"description": "too many runs in flight (Retry-After)"},
            503: {"description": "stopping, or the model is not serving (Retry-After)"},
        },
    )
    async def chat_completions(http: Request) -> Any:
        req = await read_request(http, ChatCompletionRequest)
        if isinstance(req, JSONResponse):
            return req
        try:
            names = await check.served()
        except Exception:
            return error(503, "UNAVAILABLE", "the model is not serving yet", headers={"Retry-After": "5"})
        if req.model is not None and req.model not in names:
            return error(404, "model_not_found", f"the model {req.model!r} does not exist here", param="model")
        try:  # what the engine is asked, made before a slot is taken: a request that cannot be is a 400
            prompt, schema = flatten_messages(req.model_request()), _schema(req)
            json.dumps([prompt, schema])
        except (RecursionError, ValueError, TypeError):
            return error(400, "INVALID_REQUEST", TOO_DEEP_TO_RENDER, param="messages")
        tenant = tenant_of(http)
        ticket, reason = await admission.admit(tenant)
        if ticket is None:
            return error(429, "TOO_MANY_RUNS", reason, headers={"Retry-After": str(retry_after_s)})
        admission.start(ticket)
        cid = f"chatcmpl-{uuid.uuid4().hex}"
        call = _Call(req, cid, int(time.time()), names[0], _recorder(sink, req, cid, tenant), prompt, schema)
        items = _generate(llm, call)
        try:
            first = await anext(items)
        except BaseException:  # cancelled (the client left) before the engine answered
            await admission.release(ticket)
            call.rec.finish("FAILED", release_outcome="FAILED", error_code="CLIENT_DISCONNECTED")
            raise
        if "error" in first:  # refused before a token (the prompt is over the context): a plain 4xx
            await items.aclose()
            await admission.release(ticket)
            return _refused(call, first["error"])
        if req.stream:
            body = _stream(call, first, items)
            released = False

            async def cleanup() -> None:
                nonlocal released
                if released:
                    return
                released = True
                await body.aclose()  # its own finally finishes the audited run, if it started
                await items.aclose()  # cancels the engine's request if it is still generating
                await admission.release(ticket)
                if not call.rec.finished:  # the response never started: the body never ran
                    _finish(call, "CLIENT_DISCONNECTED")

            return CleanedUpStream(body, cleanup, media_type="text/event-stream")
        try:
            return await _complete(call, first, items)
        finally:
            await items.aclose()
            await admission.release(ticket)

    if embedder is not None:
        add_embedding_route(app, embedder, read_request)


TOO_DEEP_TO_RENDER = "the messages or tools cannot be rendered for the model (nested too deeply?)"


class CleanedUpStream(StreamingResponse):
    """A stream whose cleanup (the admission slot, the engine request, the audited run) runs once when
    the response ends, however it ends: finished, the client gone mid-stream, or never started because
    sending the headers failed (then the body generator, never iterated, would run no ``finally``)."""

    def __init__(self, content: AsyncIterator[bytes], cleanup: Callable[[], Awaitable[None]], **kw: Any) -> None:
        super().__init__(content, **kw)
        self._cleanup = cleanup

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await asyncio.shield(self._cleanup())


def _schema(req: ChatCompletionRequest) -> dict[str, Any] | None:
    request = req.model_request()
    if req.must_call():
        return tool_call_schema(request.tools, _most_calls(req))
    return guided_schema(request)


def _most_calls(req: ChatCompletionRequest) -> int:
    """``parallel_tool_calls: false`` allows one call per reply (a sampled small model wrote two)."""
    return 1 if req.parallel_tool_calls is False else MAX_TOOL_CALLS


@dataclass
class _Call:
    """One completion: the request, its ids, the audited run it is, and what the engine returned."""

    req: ChatCompletionRequest
    cid: str
    created: int
    name: str
    rec: RunRecorder
    prompt: list[dict[str, str]]
    schema: dict[str, Any] | None
    usage: Usage | None = None
    finish_reason: str = "stop"
    text: list[str] = field(default_factory=list)

    def chunk(self, delta: dict[str, Any] | None, finish: str | None = None) -> bytes:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        body: dict[str, Any] = {
            "id": self.cid,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.name,
            "choices": choices,
        }
        if delta is None:  # stream_options.include_usage: a last chunk with no choices, only usage
            body["usage"] = self.usage_body()
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()

    def usage_body(self) -> dict[str, int]:
        u = self.usage or Usage(0, 0)
        return {"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens, "total_tokens": u.total_tokens}

    def message(self) -> dict[str, Any]:
        """The reply as OpenAI's assistant message: text, or the tool calls it parsed into."""
        text = "".join(self.text)
        parsed = parse_reply(text, ModelResponse(text=text, usage=self.usage), self.req.model_request())
        if parsed.tool_calls:
            self.finish_reason = "tool_calls"
            calls = parsed.tool_calls[: _most_calls(self.req)]
            return {"role": "assistant", "content": None, "tool_calls": tool_calls_out(calls)}
        return {"role": "assistant", "content": text}


async def _generate(llm: DeploymentHandle, call: _Call) -> AsyncGenerator[dict[str, Any], None]:
    """The engine's items for this call: text deltas, then one with the finish reason and usage (or an
    error). Closing this generator cancels the request, which aborts the generation in the engine."""
    req = call.req
    gen: Any = llm.options(stream=True).stream_chat.remote(
        call.prompt, req.max_new_tokens(), req.sampling(), call.schema
    )
    try:
        async for item in gen:
            if "usage" in item:
                u = item["usage"]
                call.usage = Usage(int(u["prompt_tokens"]), int(u["completion_tokens"]))
                call.finish_reason = item.get("finish_reason") or "stop"
            yield item
    except Exception as err:  # the replica died or is unreachable: an answer, not a crash
        yield {"error": f"ENGINE_ERROR: the LLM deployment failed ({type(err).__name__})"}
    finally:
        if call.usage is None:
            gen.cancel()


def _refused(call: _Call, message: str) -> JSONResponse:
    code, _, detail = message.partition(": ")
    code = code if code.isupper() and detail else "ENGINE_ERROR"
    call.rec.finish("FAILED", release_outcome="FAILED", error_code=code, error_message=detail or message)
    if code == "CONTEXT_TOO_LONG":
        return error(400, code, detail, param="messages")
    return error(503, code, detail or message)


def _finish(call: _Call, failed: str | None) -> None:
    call.rec.model_usage("MODEL", "openai", 1, call.usage)  # a call that ran; without usage if cut short
    if failed is None:
        call.rec.finish("SUCCEEDED", release_outcome="SUCCESS", content_type="OPENAI_COMPLETION")
    else:
        call.rec.finish("FAILED", release_outcome="FAILED", error_code=failed)


async def _complete(call: _Call, first: dict[str, Any], items: AsyncIterator[dict[str, Any]]) -> JSONResponse:
    failed: str | None = "CLIENT_DISCONNECTED"
    try:
        item: dict[str, Any] | None = first
        while item is not None:
            if "error" in item:
                failed = "ENGINE_ERROR"
                return error(503, "ENGINE_ERROR", str(item["error"]).removeprefix("ENGINE_ERROR: "))
            call.text.append(item.get("delta", ""))
            item = await anext(items, None)
        failed = None
    finally:
        _finish(call, failed)
    message = call.message()
    body = {
        "id": call.cid,
        "object": "chat.completion",
        "created": call.created,
        "model": call.name,
        "choices": [{"index": 0, "message": message, "finish_reason": call.finish_reason, "logprobs": None}],
        "usage": call.usage_body(),
    }
    return JSONResponse(body)


async def _stream(
    call: _Call, first: dict[str, Any], items: AsyncIterator[dict[str, Any]]
) -> AsyncGenerator[bytes, None]:
    """Deltas as they come. With tools offered, the reply is held until it is whole: only then is it
    known to be a tool call (sent as one ``tool_calls`` delta) or text."""
    hold = bool(call.req.offered_tools())
    failed: str | None = "CLIENT_DISCONNECTED"
    try:
        yield call.chunk({"role": "assistant", "content": ""})
        item: dict[str, Any] | None = first
        while item is not None:
            if "error" in item:
                failed = "ENGINE_ERROR"
                yield f"data: {json.dumps({'error': {'message': item['error'], 'type': 'server_error'}})}\n\n".encode()
                break
            if "delta" in item:
                call.text.append(item["delta"])
                if not hold:
                    yield call.chunk({"content": item["delta"]})
            item = await anext(items, None)
        else:
            failed = None
            if hold:
                message = call.message()
                delta = {k: v for k, v in message.items() if k != "role"}
                if "tool_calls" in delta:
                    delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta["tool_calls"])]
                yield call.chunk(delta)
            yield call.chunk({}, call.finish_reason)
            if call.req.stream_options and call.req.stream_options.include_usage:
                yield call.chunk(None)
        yield b"data: [DONE]\n\n"
    finally:
        _finish(call, failed)
