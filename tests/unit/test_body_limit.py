"""/v1 bodies are capped and bad JSON is a 400 there too: the API as the ingress builds it (create_api,
then the OpenAI routes), the LLM deployment's handle a stand-in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from deployments.http_api import create_api
from deployments.limits import RunLimiter
from deployments.openai_api import add_openai_routes
from tests.fakes.serve_handles import ScriptedLLMHandle
from tests.fakes.sinks import ListSink
from tests.unit.test_openai_routes_admission import BODY

CAP = 4096
JSON = {"content-type": "application/json"}


def client() -> httpx.AsyncClient:
    async def run_chat(req: Any, tenant: str | None) -> Any:  # pragma: no cover - not called
        yield None

    async def flush() -> bool:
        return True

    app = create_api(run_chat, None, lambda r: None, flush, 65536, max_openai_body_bytes=CAP)  # type: ignore[arg-type]
    add_openai_routes(app, ScriptedLLMHandle(), limiter=RunLimiter(4, 2), sink=ListSink())  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_a_body_under_the_cap_is_answered() -> None:
    async with client() as c:
        r = await c.post("/v1/chat/completions", json=BODY)
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "pong"


async def test_a_declared_body_over_the_cap_is_refused_unread() -> None:
    big = {"messages": [{"role": "user", "content": "x" * (CAP + 1)}]}
    async with client() as c:
        r = await c.post("/v1/chat/completions", json=big)
    assert r.status_code == 413 and r.json()["error"]["code"] == "BODY_TOO_LARGE"


async def test_a_streamed_body_without_a_length_is_refused_once_it_passes_the_cap() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(8):
            yield b"x" * 1024
        yield b'"}]}'

    async with client() as c:
        r = await c.post("/v1/chat/completions", content=chunks(), headers=JSON)
    assert "content-length" not in r.request.headers
    assert r.status_code == 413 and r.json()["error"]["code"] == "BODY_TOO_LARGE"


async def test_json_nested_past_the_stack_is_a_400_not_a_500() -> None:
    async with client() as c:
        r = await c.post("/v1/chat/completions", content=b"[" * 2000 + b"]" * 2000, headers=JSON)
    assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_JSON"
