"""Admission control for chat runs, per ingress replica: a cap on runs in flight and a cap per
tenant. A request over either gets 429 with Retry-After before its stream starts; nothing queues.

A slot is reserved when the request is admitted and released when its stream ends. A stream that
never starts (the client left before the response began) would hold its slot forever, so a
reservation not started within ``start_timeout_s`` is reclaimed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass


@dataclass
class _Slot:
    tenant: str
    reserved_at: float
    started: bool = False


class RunLimiter:
    def __init__(self, max_runs: int, max_per_tenant: int, start_timeout_s: float = 30.0) -> None:
        self.max_runs = max_runs
        self.max_per_tenant = max_per_tenant
        self.start_timeout_s = start_timeout_s
        self._slots: dict[int, _Slot] = {}
        self._ids = itertools.count(1)
        # Told which limit refused a run ("service", "tenant", "cluster_tenant"): the metrics count it.
        self.on_reject: Callable[[str], None] = lambda limit: None

    def _reclaim(self, now: float) -> None:
        stale = [k for k, s in self._slots.items() if not s.started and now - s.reserved_at > self.start_timeout_s]
        for k in stale:
            del self._slots[k]

    def in_flight(self, tenant: str | None = None) -> int:
        if tenant is None:
            return len(self._slots)
        return sum(1 for s in self._slots.values() if s.tenant == tenant)

    def acquire(self, tenant: str | None) -> tuple[int | None, str]:
        """(slot id, "") when admitted; (None, reason) when over a limit."""
        now = time.monotonic()
        self._reclaim(now)
        who = tenant or "-"
        if len(self._slots) >= self.max_runs:
            self.on_reject("service")
            return None, f"the service is running {len(self._slots)} diagnoses, its limit; try again shortly"
        # Without authentication every caller is the same anonymous tenant: only the global cap applies.
        if tenant is not None and self.in_flight(who) >= self.max_per_tenant:
            self.on_reject("tenant")
            return None, f"{self.max_per_tenant} diagnoses of this tenant are running, its limit; try again shortly"
        slot = next(self._ids)
        self._slots[slot] = _Slot(who, now)
        return slot, ""

    def start(self, slot: int) -> None:
        if slot in self._slots:
            self._slots[slot].started = True

    def release(self, slot: int) -> None:
        self._slots.pop(slot, None)


class ActiveRuns:
    """The gate on runs working at once (``ingress.max_active_runs``), with its counts for the metrics:
    runs working now and runs admitted but waiting for a turn, their stream open."""

    def __init__(self, limit: int) -> None:
        self._gate = asyncio.Semaphore(limit)
        self.running = 0
        self.waiting = 0

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        self.waiting += 1
        try:
            await self._gate.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self._gate.release()
