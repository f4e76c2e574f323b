"""/v1/chat/completions goes through the same admission and audit trail as /api/chat: a tenant over its
cap gets 429, a draining replica 503, and every completion is an audited run whose stored trail is
complete and whose tokens reconcile. The LLM deployment's handle is a stand-in."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from fastapi import FastAPI

from deployments.auth import ApiKeyMiddleware
from deployments.limits import RunLimiter
from deployments.openai_api import add_openai_routes
from tests.fakes.audit_db import persist_and_trace
from tests.fakes.serve_handles import ScriptedLLMHandle
from tests.fakes.sinks import ListSink
from tests.unit.test_limits import until

# Tenants come from API keys, as in the service (ApiKeyMiddleware); without keys a caller is anonymous.
KEYS = {"team-a": "key-aaaa-1111", "team-b": "key-bbbb-2222", "team-c": "key-cccc-3333"}


def as_tenant(tenant: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[tenant]}"}


def app_with(
    llm: ScriptedLLMHandle, limiter: RunLimiter, sink: ListSink, draining: list[bool] | None = None, keys: bool = True
) -> FastAPI:
    app = FastAPI()
    add_openai_routes(
        app,
        llm,  # type: ignore[arg-type]
        limiter=limiter,
        sink=sink,
        stopping=lambda: bool(draining and draining[0]),
    )
    if keys:
        app.add_middleware(ApiKeyMiddleware, keys=KEYS)
    return app


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


BODY = {"messages": [{"role": "user", "content": "ping"}]}


async def test_a_completion_is_an_audited_run(tmp_path: Path) -> None:
    sink, limiter = ListSink(), RunLimiter(4, 2)
    async with client(app_with(ScriptedLLMHandle(), limiter, sink)) as c:
        r = await c.post("/v1/chat/completions", json=BODY, headers=as_tenant("team-a"))
    assert r.status_code == 200 and r.json()["usage"]["total_tokens"] == 7
    assert limiter.in_flight() == 0
    trace = persist_and_trace(sink.records, tmp_path, "openai-team-a")
    assert trace["run"]["run_id"] == r.json()["id"] and trace["run"]["tenant_id"] == "team-a"
    assert trace["run"]["status"] == "SUCCEEDED" and trace["run"]["total_token_count"] == 7
    assert [e["event_type"] for e in trace["timeline"]] == ["RUN_STARTED", "MODEL_TOKEN_USAGE", "RUN_FINISHED"]
    assert trace["summary"]["complete"] and trace["summary"]["tokens_reconciled"]


async def test_a_streamed_completion_is_audited_with_its_usage(tmp_path: Path) -> None:
    sink, limiter = ListSink(), RunLimiter(4, 2)
    async with client(app_with(ScriptedLLMHandle(), limiter, sink, keys=False)) as c:
        r = await c.post("/v1/chat/completions", json={**BODY, "stream": True})
    assert r.status_code == 200 and r.text.endswith("data: [DONE]\n\n")
    assert limiter.in_flight() == 0
    trace = persist_and_trace(sink.records, tmp_path, "openai-anonymous")
    assert trace["run"]["total_token_count"] == 7 and trace["summary"]["complete"]


async def test_a_tenant_over_its_cap_gets_429_and_a_draining_replica_503() -> None:
    gate = asyncio.Event()
    sink, limiter, draining = ListSink(), RunLimiter(8, 1), [False]
    async with client(app_with(ScriptedLLMHandle(gate=gate), limiter, sink, draining)) as c:
        first = asyncio.create_task(c.post("/v1/chat/completions", json=BODY, headers=as_tenant("team-a")))
        await until(lambda: limiter.in_flight("team-a") == 1)
        over = await c.post("/v1/chat/completions", json=BODY, headers=as_tenant("team-a"))
        assert over.status_code == 429 and over.json()["error"]["code"] == "TOO_MANY_RUNS"
        other = asyncio.create_task(c.post("/v1/chat/completions", json=BODY, headers=as_tenant("team-b")))
        await until(lambda: limiter.in_flight("team-b") == 1)  # another tenant is admitted beside it
        draining[0] = True
        stopped = await c.post("/v1/chat/completions", json=BODY, headers=as_tenant("team-c"))
        assert stopped.status_code == 503 and stopped.headers["retry-after"] == "2"
        gate.set()
        assert (await first).status_code == 200 and (await other).status_code == 200
    assert limiter.in_flight() == 0
    finished = [r for r in sink.records if r.kind == "run_finished"]
    assert len(finished) == 2  # the refused requests started no run
