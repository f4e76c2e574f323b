"""OpenAI-compatible routes on the ingress: ``GET /v1/models``, ``POST /v1/chat/completions``.

A completion is admitted by the same limiter as a diagnosis (429 over a cap, 503 while draining) and
audited as a run of its own (agent flow ``OPENAI``: RUN_STARTED, MODEL_TOKEN_USAGE, RUN_FINISHED, in
session ``openai-<tenant>``), so the model's use through /v1 is counted and traceable like /api/chat.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from ray.serve.handle import DeploymentHandle

from deployments.admission import Admission, ClusterTenantCap
from deployments.http_api import tenant_of
from deployments.limits import RunLimiter
from deployments.llm_client import LLMHandleModel
from harness.model import Message, ModelError, ModelRequest
from harness.protocols import AuditSink
from harness.recorder import RunRecorder, Usage


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "user", "assistant"]
    content: str


class ResponseFormat(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["text", "json_object", "json_schema"] = "text"
    json_schema: dict[str, Any] | None = None


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    max_tokens: int | None = Field(default=None, gt=0)
    max_completion_tokens: int | None = Field(default=None, gt=0)
    temperature: float = Field(default=0.0, ge=0, le=2)
    response_format: ResponseFormat | None = None

    def output_schema(self) -> dict[str, Any] | None:
        rf = self.response_format
        if rf is None or rf.type == "text":
            return None
        if rf.type == "json_object":
            return {"type": "object"}
        return (rf.json_schema or {}).get("schema") or {"type": "object"}


class _NoAudit:
    def emit(self, record: Any) -> None:
        pass


def _recorder(sink: AuditSink | None, req: ChatCompletionRequest, cid: str, tenant: str | None) -> RunRecorder:
    users = [m.content for m in req.messages if m.role == "user"]
    query = (users[-1] if users else req.messages[-1].content)[:2000]
    session = f"openai-{tenant or 'anonymous'}"[:64]
    rec = RunRecorder(sink or _NoAudit(), session, cid, query, tenant_id=tenant)
    rec.start(agent_flow="OPENAI")
    return rec


def add_openai_routes(
    app: FastAPI,
    llm: DeploymentHandle,
    error: Any,
    *,
    limiter: RunLimiter | None = None,
    cluster_cap: ClusterTenantCap | None = None,
    sink: AuditSink | None = None,
    retry_after_s: int = 2,
    stopping: Callable[[], bool] = lambda: False,
) -> None:
    model = LLMHandleModel(llm)
    admission = Admission(limiter, cluster_cap)

    @app.get("/v1/models", summary="OpenAI-compatible: the served model")
    async def models() -> JSONResponse:
        names = await llm.models.remote()
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": n, "object": "model", "created": 0, "owned_by": "raydiag"} for n in names],
            }
        )

    @app.post("/v1/chat/completions", summary="OpenAI-compatible chat completions (stream and non-stream)")
    async def chat_completions(req: ChatCompletionRequest, http: Request) -> Any:
        if stopping():
            return error(
                503, "SERVICE_STOPPING", "the service is stopping", headers={"Retry-After": str(retry_after_s)}
            )
        tenant = tenant_of(http)
        ticket, reason = await admission.admit(tenant)
        if ticket is None:
            return error(429, "TOO_MANY_RUNS", reason, headers={"Retry-After": str(retry_after_s)})
        admission.start(ticket)
        created = int(time.time())
        cid = f"chatcmpl-{uuid.uuid4().hex}"
        rec = _recorder(sink, req, cid, tenant)
        try:
            names = await llm.models.remote()
        except Exception:
            await admission.release(ticket)
            rec.finish("FAILED", release_outcome="FAILED", error_code="UNAVAILABLE")
            raise
        call = _Call(req, req.max_completion_tokens or req.max_tokens or 512, cid, created, names[0], rec)
        if req.stream:

            async def streamed() -> AsyncIterator[bytes]:
                try:
                    async for part in _stream(llm, call):
                        yield part
                finally:
                    await admission.release(ticket)

            return StreamingResponse(streamed(), media_type="text/event-stream")
        try:
            return await _complete(model, call, error)
        finally:
            await admission.release(ticket)


@dataclass(frozen=True)
class _Call:
    """One completion: the request, its limits and ids, and the audited run it is."""

    req: ChatCompletionRequest
    max_tokens: int
    cid: str
    created: int
    name: str
    rec: RunRecorder


async def _complete(model: LLMHandleModel, call: _Call, error: Any) -> Any:
    req, rec = call.req, call.rec
    request = ModelRequest(
        messages=[Message(m.role, m.content) for m in req.messages],
        stage="openai",
        json_schema=req.output_schema(),
        max_tokens=call.max_tokens,
        temperature=req.temperature,
    )
    try:
        resp = await model.complete(request)
    except ModelError as err:
        status = 400 if err.code in ("CONTEXT_TOO_LONG", "INVALID_REQUEST") else 503
        rec.finish("FAILED", release_outcome="FAILED", error_code=err.code, error_message=str(err))
        return error(status, err.code, str(err))
    usage = resp.usage
    rec.model_usage("MODEL", "openai", 1, usage)
    rec.finish("SUCCEEDED", release_outcome="SUCCESS", content_type="OPENAI_COMPLETION")
    body = {
        "id": call.cid,
        "object": "chat.completion",
        "created": call.created,
        "model": call.name,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": resp.text},
                "finish_reason": resp.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": usage.input_tokens if usage else 0,
            "completion_tokens": usage.output_tokens if usage else 0,
            "total_tokens": usage.total_tokens if usage else 0,
        },
    }
    return JSONResponse(body)


async def _stream(llm: DeploymentHandle, call: _Call) -> AsyncIterator[bytes]:
    req, rec = call.req, call.rec
    messages = [{"role": m.role, "content": m.content} for m in req.messages]

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
        body: dict[str, Any] = {
            "id": call.cid,
            "object": "chat.completion.chunk",
            "created": call.created,
            "model": call.name,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage is not None:
            body["usage"] = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()

    usage: Usage | None = None
    failed: str | None = "CLIENT_DISCONNECTED"
    try:
        yield chunk({"role": "assistant", "content": ""})
        gen: Any = llm.options(stream=True).stream_chat.remote(
            messages, call.max_tokens, req.temperature, req.output_schema()
        )
        async for item in gen:
            if "delta" in item:
                yield chunk({"content": item["delta"]})
            elif "error" in item:
                failed = "ENGINE_ERROR"
                yield f"data: {json.dumps({'error': {'message': item['error']}})}\n\n".encode()
                break
            else:
                u = item["usage"]
                usage = Usage(int(u["prompt_tokens"]), int(u["completion_tokens"]))
                failed = None
                yield chunk({}, item["finish_reason"], item["usage"])
        yield b"data: [DONE]\n\n"
    finally:
        if usage is not None or failed == "CLIENT_DISCONNECTED":
            rec.model_usage("MODEL", "openai", 1, usage)  # a call that ran; without usage if cut short
        if failed is None:
            rec.finish("SUCCEEDED", release_outcome="SUCCESS", content_type="OPENAI_COMPLETION")
        else:
            rec.finish("FAILED", release_outcome="FAILED", error_code=failed)
