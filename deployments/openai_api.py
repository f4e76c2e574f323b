"""OpenAI-compatible routes on the ingress: ``GET /v1/models``, ``POST /v1/chat/completions``."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from ray.serve.handle import DeploymentHandle

from deployments.llm_client import LLMHandleModel
from harness.model import Message, ModelError, ModelRequest


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


def add_openai_routes(app: FastAPI, llm: DeploymentHandle, error: Any) -> None:
    model = LLMHandleModel(llm)

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
    async def chat_completions(req: ChatCompletionRequest) -> Any:
        names = await llm.models.remote()
        name = names[0]
        max_tokens = req.max_completion_tokens or req.max_tokens or 512
        created = int(time.time())
        cid = f"chatcmpl-{uuid.uuid4().hex}"
        if req.stream:
            return StreamingResponse(_stream(llm, req, max_tokens, cid, created, name), media_type="text/event-stream")
        request = ModelRequest(
            messages=[Message(m.role, m.content) for m in req.messages],
            stage="openai",
            json_schema=req.output_schema(),
            max_tokens=max_tokens,
            temperature=req.temperature,
        )
        try:
            resp = await model.complete(request)
        except ModelError as err:
            status = 400 if err.code in ("CONTEXT_TOO_LONG", "INVALID_REQUEST") else 503
            return error(status, err.code, str(err))
        usage = resp.usage
        body = {
            "id": cid,
            "object": "chat.completion",
            "created": created,
            "model": name,
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


async def _stream(
    llm: DeploymentHandle, req: ChatCompletionRequest, max_tokens: int, cid: str, created: int, name: str
) -> AsyncIterator[bytes]:
    messages = [{"role": m.role, "content": m.content} for m in req.messages]

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
        body: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": name,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage is not None:
            body["usage"] = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""})
    gen: Any = llm.options(stream=True).stream_chat.remote(messages, max_tokens, req.temperature, req.output_schema())
    async for item in gen:
        if "delta" in item:
            yield chunk({"content": item["delta"]})
        elif "error" in item:
            yield f"data: {json.dumps({'error': {'message': item['error']}})}\n\n".encode()
            break
        else:
            yield chunk({}, item["finish_reason"], item["usage"])
    yield b"data: [DONE]\n\n"
