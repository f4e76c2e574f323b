"""Readiness tells the truth: /healthz is 503 while a deployment a chat needs does not answer (the
LLM replica still loading, the search replica gone), 200 once every one does, degraded but serving
when only the audit trail is down (it spills); /livez answers without asking anyone."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

import deployments.http_api as http_api
from deployments.http_api import create_api
from harness.contracts import ChatRequest, SseEvent
from tests.unit.test_trace_wait import ArrivingAudit


class AuditDown(ArrivingAudit):
    async def health(self) -> dict[str, Any]:
        raise ConnectionError("writer gone")


def client(probes: dict[str, Any], audit: ArrivingAudit | None = None) -> httpx.AsyncClient:
    async def run_chat(req: ChatRequest, tenant: str | None) -> Any:  # pragma: no cover - not called
        yield SseEvent()  # type: ignore[call-arg]

    async def flush() -> bool:
        return True

    app = create_api(run_chat, audit or ArrivingAudit(1), lambda r: None, flush, 65536, probes=probes)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def ok() -> dict[str, Any]:
    return {"models": ["m"]}


async def loading() -> dict[str, Any]:
    await asyncio.sleep(60)  # a handle call waits while no replica serves yet
    return {}


async def gone() -> dict[str, Any]:
    raise RuntimeError("replica died")


async def test_ready_when_every_deployment_answers() -> None:
    async with client({"llm": ok, "embedder": ok, "search": ok}) as c:
        r = await c.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"
    assert set(r.json()["components"]) == {"ingress", "llm", "embedder", "search", "audit"}


async def test_not_ready_while_the_llm_loads_or_search_is_gone(monkeypatch: Any) -> None:
    monkeypatch.setattr(http_api, "PROBE_TIMEOUT_S", 0.2)
    async with client({"llm": loading, "embedder": ok, "search": gone}) as c:
        r = await c.get("/healthz")
        live = await c.get("/livez")
    body = r.json()
    assert r.status_code == 503 and body["status"] == "unavailable"
    assert body["components"]["llm"]["state"] == "unavailable" and "within" in body["components"]["llm"]["error"]
    assert body["components"]["search"] == {"state": "unavailable", "error": "RuntimeError"}
    assert body["components"]["embedder"]["state"] == "ok"
    assert live.status_code == 200 and live.json() == {"status": "alive"}


async def test_an_audit_outage_degrades_but_serves() -> None:
    async with client({"llm": ok}, AuditDown(1)) as c:
        r = await c.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "degraded"
    assert r.json()["components"]["audit"]["state"] == "down"


class AuditWithDetails(ArrivingAudit):
    """What the audit deployment's health says (deployments/audit_actor.py): counters, and a path and an
    error text that an unauthenticated page must not show."""

    async def health(self) -> dict[str, Any]:
        return {
            "state": "degraded",
            "written": 12,
            "pending": 0,
            "spilled": 3,
            "dead_lettered": 1,
            "dialect": "mysql",
            "last_error": "(pymysql.err.OperationalError) Access denied for user 'raydiag'@'10.0.0.7'",
            "dead_letter_path": "/var/lib/raydiag/audit-spill.dead.jsonl",
        }


async def test_readyz_is_healthz_and_shows_no_paths_or_error_texts() -> None:
    async with client({"llm": ok}, AuditWithDetails(1)) as c:
        ready, health = await c.get("/readyz"), await c.get("/healthz")
    assert ready.status_code == health.status_code == 200 and ready.json() == health.json()
    assert ready.json()["components"]["audit"] == {
        "state": "degraded",
        "written": 12,
        "pending": 0,
        "spilled": 3,
        "dead_lettered": 1,
        "dialect": "mysql",
    }


async def test_head_answers_every_get_route_without_a_body() -> None:
    async with client({"llm": ok}) as c:
        for path in ("/readyz", "/healthz", "/livez", "/", "/openapi.json"):
            got, head = await c.get(path), await c.head(path)
            assert head.status_code == got.status_code == 200, path
            assert head.content == b"" and head.headers["content-length"] == str(len(got.content)), path
        assert (await c.head("/api/chat")).status_code == 405  # POST only: HEAD is not a way around that
