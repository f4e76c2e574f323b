"""Admission control: 429 with Retry-After before the stream starts, per service and per tenant;
slots come back when streams end or never start."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable

import httpx

from deployments.http_api import create_api
from deployments.limits import RunLimiter
from harness.contracts import ChatRequest, DoneEvent, MetadataEvent, SseEvent
from tests.unit.test_auth import KEYS, TenantAudit, auth


async def until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(10):
        while not predicate():  # noqa: ASYNC110 - polls the limiter's state, which has no event
            await asyncio.sleep(0.01)


def make(limiter: RunLimiter, gate: asyncio.Event, stopping: Callable[[], bool] = lambda: False) -> httpx.AsyncClient:
    async def run_chat(req: ChatRequest, tenant: str | None) -> AsyncGenerator[SseEvent, None]:
        yield MetadataEvent(session_id=req.Id, run_id="r1")
        await gate.wait()  # holds the run open until the test lets it finish
        yield DoneEvent(outcome="SUCCESS")

    async def flush() -> bool:
        return True

    app = create_api(
        run_chat, TenantAudit(), lambda r: None, flush, 65536, KEYS, limiter, retry_after_s=3, stopping=stopping
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=10)


async def test_over_the_limits_is_429_with_retry_after_and_slots_come_back() -> None:
    limiter = RunLimiter(max_runs=3, max_per_tenant=2)
    gate = asyncio.Event()
    async with make(limiter, gate) as client:

        async def chat(key: str) -> httpx.Response:
            return await client.post("/api/chat", json={"Id": "s", "Question": "q"}, headers=auth(key))

        a1 = asyncio.create_task(chat(KEYS["team-a"]))
        a2 = asyncio.create_task(chat(KEYS["team-a"]))
        b1 = asyncio.create_task(chat(KEYS["team-b"]))
        await until(lambda: limiter.in_flight() == 3)
        over_tenant = await chat(KEYS["team-a"])  # the service is also full now
        assert over_tenant.status_code == 429 and over_tenant.headers["retry-after"] == "3"
        assert over_tenant.json()["error"]["code"] == "TOO_MANY_RUNS"
        gate.set()
        done = await asyncio.gather(a1, a2, b1)
        assert all(r.status_code == 200 and r.text.count("event: done") == 1 for r in done)
        assert limiter.in_flight() == 0
        gate.clear()
        a3 = asyncio.create_task(chat(KEYS["team-a"]))
        a4 = asyncio.create_task(chat(KEYS["team-a"]))
        await until(lambda: limiter.in_flight() == 2)
        third = await chat(KEYS["team-a"])  # the service has room, the tenant has not
        assert third.status_code == 429 and "tenant" in third.json()["error"]["message"]
        gate.set()
        await asyncio.gather(a3, a4)
        assert limiter.in_flight() == 0


def test_a_reservation_that_never_starts_is_reclaimed() -> None:
    limiter = RunLimiter(max_runs=1, max_per_tenant=1, start_timeout_s=0.0)
    slot, _ = limiter.acquire("t")
    assert slot is not None
    again, _ = limiter.acquire("t")  # the first never started and timed out: reclaimed
    assert again is not None and limiter.in_flight() == 1
    limiter.start(again)
    third, reason = limiter.acquire("t")
    assert third is None and "limit" in reason


async def test_a_draining_replica_finishes_open_streams_and_refuses_new_ones_with_503() -> None:
    limiter = RunLimiter(max_runs=8, max_per_tenant=8)
    gate = asyncio.Event()
    draining = False
    async with make(limiter, gate, lambda: draining) as client:
        key = auth(KEYS["team-a"])
        assert (await client.get("/healthz")).status_code == 200
        open_run = asyncio.create_task(client.post("/api/chat", json={"Id": "s", "Question": "q"}, headers=key))
        await until(lambda: limiter.in_flight() == 1)
        draining = True
        refused = await client.post("/api/chat", json={"Id": "s2", "Question": "q"}, headers=key)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "3"
        assert refused.json()["error"]["code"] == "SERVICE_STOPPING"
        health = await client.get("/healthz")
        assert health.status_code == 503 and health.json()["status"] == "stopping"
        assert limiter.in_flight() == 1  # the refusal took no slot
        gate.set()
        finished = await open_run
        assert finished.status_code == 200 and finished.text.count("event: done") == 1
        assert limiter.in_flight() == 0
