"""Per-tenant caps count across ingress replicas: the control actor's board (a plain object here, the
same class the actor runs) admits a tenant's runs up to the cap on all replicas together, frees the
slots of a replica that stopped reporting, and an unreachable board degrades to per-replica caps."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import httpx

from deployments.admission import ClusterTenantCap
from deployments.http_api import create_api
from deployments.limits import RunLimiter
from deployments.stopping import STALE_AFTER_S, DrainBoard
from harness.contracts import ChatRequest, DoneEvent, MetadataEvent, SseEvent
from tests.unit.test_auth import KEYS, TenantAudit, auth
from tests.unit.test_limits import until
from tests.unit.test_stopping import Clock


def test_the_cap_counts_every_replica_and_gone_replicas_free_their_slots() -> None:
    clock = Clock()
    board = DrainBoard(clock)
    for r in ("r1", "r2"):
        board.report("app", r, 0, False)
    first = board.acquire("app", "team-a", "r1", 2)
    second = board.acquire("app", "team-a", "r2", 2)
    assert first is not None and second is not None
    assert board.acquire("app", "team-a", "r1", 2) is None  # 2 in flight across r1 and r2
    assert board.acquire("app", "team-b", "r1", 2) is not None  # another tenant has its own count
    assert board.acquire("other-app", "team-a", "r9", 2) is not None  # another application too
    board.release(first)
    assert board.acquire("app", "team-a", "r1", 2) is not None
    # r2 stops reporting (killed, scaled down): its slot goes with it
    clock.now += STALE_AFTER_S + 1
    board.report("app", "r1", 1, False)
    assert board.acquire("app", "team-a", "r1", 2) is not None


class BoardActor:
    """The actor handle's surface over one board, shared by two replicas' clients."""

    def __init__(self, board: DrainBoard, fail: bool = False) -> None:
        self.board = board
        self.fail = fail
        self.acquire = self._method(board.acquire)
        self.release = self._method(board.release)

    def _method(self, fn: Any) -> Any:
        actor = self

        class M:
            async def _call(self, *args: Any) -> Any:
                if actor.fail:
                    raise ConnectionError("actor restarting")
                return fn(*args)

            def remote(self, *args: Any) -> Any:
                return self._call(*args)

        return M()


def replica(name: str, actor: BoardActor, gate: asyncio.Event) -> httpx.AsyncClient:
    async def run_chat(req: ChatRequest, tenant: str | None) -> AsyncGenerator[SseEvent, None]:
        yield MetadataEvent(session_id=req.Id, run_id="r1")
        await gate.wait()
        yield DoneEvent(outcome="SUCCESS")

    async def flush() -> bool:
        return True

    cap = ClusterTenantCap("app", name, cap=1, control=lambda: actor)
    app = create_api(run_chat, TenantAudit(), lambda r: None, flush, 65536, KEYS, RunLimiter(8, 1), cluster_cap=cap)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=10)


async def test_a_tenant_at_its_cap_on_one_replica_is_refused_on_the_other() -> None:
    board = DrainBoard()
    actor = BoardActor(board)
    gate = asyncio.Event()
    async with replica("r1", actor, gate) as one, replica("r2", actor, gate) as two:
        key = auth(KEYS["team-a"])
        running = asyncio.create_task(one.post("/api/chat", json={"Id": "s", "Question": "q"}, headers=key))
        await until(lambda: len(board.slots) == 1)
        refused = await two.post("/api/chat", json={"Id": "s2", "Question": "q"}, headers=key)
        assert refused.status_code == 429 and "across the service" in refused.json()["error"]["message"]
        gate.set()
        assert (await running).status_code == 200
        assert board.slots == {}  # released when the stream ended
        again = await two.post("/api/chat", json={"Id": "s3", "Question": "q"}, headers=key)
        assert again.status_code == 200


async def test_an_unreachable_board_falls_back_to_the_replica_caps() -> None:
    actor = BoardActor(DrainBoard(), fail=True)
    gate = asyncio.Event()
    gate.set()
    async with replica("r1", actor, gate) as one:
        r = await one.post("/api/chat", json={"Id": "s", "Question": "q"}, headers=auth(KEYS["team-a"]))
    assert r.status_code == 200
