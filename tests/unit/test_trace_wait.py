"""A trace read can wait, bounded, for a run's trail to be complete: records of a run can still sit in
another ingress replica's buffer when the read arrives."""

from __future__ import annotations

import time
from typing import Any

import httpx

from deployments.http_api import create_api
from harness.contracts import ChatRequest, SseEvent


class ArrivingAudit:
    """The audit backend as a neighbour: the trail becomes complete after ``reads_until_complete`` reads."""

    def __init__(self, reads_until_complete: int) -> None:
        self.reads = 0
        self.until = reads_until_complete

    async def trace(self, session_id: str, run_id: str | None, tenant_id: str | None) -> dict[str, Any]:
        self.reads += 1
        complete = self.reads >= self.until
        return {"ok": True, "value": {"run": {"run_id": run_id}, "summary": {"complete": complete}}}

    reasoning = trace

    async def runs(self, session_id: str, tenant_id: str | None) -> dict[str, Any]:
        return {"ok": True, "value": []}

    async def run_exists(self, session_id: str, run_id: str, tenant_id: str | None) -> bool:
        return True

    async def health(self) -> dict[str, Any]:
        return {"state": "ok"}


def client(audit: ArrivingAudit) -> httpx.AsyncClient:
    async def run_chat(req: ChatRequest, tenant: str | None) -> Any:  # pragma: no cover - not called
        yield SseEvent()  # type: ignore[call-arg]

    async def flush() -> bool:
        return True

    app = create_api(run_chat, audit, lambda r: None, flush, 65536)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_without_wait_the_first_read_is_returned_as_it_is() -> None:
    audit = ArrivingAudit(3)
    async with client(audit) as c:
        r = await c.get("/api/diagnosis/s/trace", params={"runId": "r1"})
    assert r.status_code == 200 and r.json()["summary"]["complete"] is False and audit.reads == 1


async def test_a_wait_returns_once_the_trail_is_complete() -> None:
    audit = ArrivingAudit(3)
    async with client(audit) as c:
        r = await c.get("/api/diagnosis/s/trace", params={"runId": "r1", "waitMs": 5000})
    assert r.json()["summary"]["complete"] is True and audit.reads == 3


async def test_the_wait_is_bounded_and_says_incomplete() -> None:
    audit = ArrivingAudit(10_000)
    start = time.monotonic()
    async with client(audit) as c:
        r = await c.get("/api/diagnosis/s/trace", params={"runId": "r1", "waitMs": 300})
    assert r.json()["summary"]["complete"] is False and 0.25 < time.monotonic() - start < 3
    async with client(audit) as c:
        assert (await c.get("/api/diagnosis/s/trace", params={"waitMs": 60_000})).status_code == 422
