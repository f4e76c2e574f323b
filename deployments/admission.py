"""Cluster-wide per-tenant caps: ``ingress.max_runs_per_tenant`` counts a tenant's runs across every
ingress replica, not per replica (which gave a tenant N× the cap at N replicas).

The count lives in the cluster's one control actor (deployments/stopping.py's ``DrainBoard``), whose
heartbeat from every replica frees the slots of a replica that is gone. Each admission of an
authenticated tenant costs one actor call (bounded by ``timeout_s``); unauthenticated traffic has no
tenant cap and pays nothing. An actor that does not answer degrades to the per-replica caps, which
stay as back-pressure either way: admission never fails a chat because the count is unreachable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from deployments.limits import RunLimiter
from deployments.stopping import stop_signal

log = logging.getLogger(__name__)


class ClusterTenantCap:
    def __init__(
        self,
        app: str,
        replica: str,
        cap: int,
        timeout_s: float = 0.5,
        control: Callable[[], Any] = stop_signal,
    ) -> None:
        self.app = app
        self.replica = replica
        self.cap = cap
        self.timeout_s = timeout_s
        self._control_factory = control
        self._control: Any = None
        self.unreachable = 0

    def _actor(self) -> Any:
        if self._control is None:
            self._control = self._control_factory()
        return self._control

    async def acquire(self, tenant: str) -> tuple[bool, int | None]:
        """(admitted, slot to release); admitted without a slot when the count is unreachable."""
        try:
            slot = await asyncio.wait_for(
                self._actor().acquire.remote(self.app, tenant, self.replica, self.cap), self.timeout_s
            )
        except Exception as err:
            self.unreachable += 1
            self._control = None
            log.warning("cluster tenant count unreachable (%s): per-replica caps only", type(err).__name__)
            return True, None
        return slot is not None, slot

    async def release(self, slot: int | None) -> None:
        if slot is None:
            return
        try:
            await asyncio.wait_for(self._actor().release.remote(slot), self.timeout_s)
        except Exception as err:  # the slot ages out (SLOT_MAX_AGE_S) or goes with this replica
            log.warning("cluster tenant slot %d not released: %s", slot, type(err).__name__)


class Admission:
    """The per-replica limiter (back-pressure, every caller) and, for an authenticated tenant, its
    cluster-wide cap: both admit a run, or it gets 429 before its stream starts."""

    def __init__(self, limiter: RunLimiter | None, cluster: ClusterTenantCap | None = None) -> None:
        self.limiter = limiter
        self.cluster = cluster

    async def admit(self, tenant: str | None) -> tuple[tuple[int, int | None] | None, str]:
        """((local slot, cluster slot), "") when admitted; (None, reason) when over a cap."""
        slot, reason = self.limiter.acquire(tenant) if self.limiter else (0, "")
        if slot is None:
            return None, reason
        cluster_slot = None
        if tenant is not None and self.cluster is not None:
            admitted, cluster_slot = await self.cluster.acquire(tenant)
            if not admitted:
                if self.limiter:
                    self.limiter.on_reject("cluster_tenant")
                    self.limiter.release(slot)
                cap = self.cluster.cap
                return None, f"{cap} diagnoses of this tenant are running across the service, its limit; try again"
        return (slot, cluster_slot), ""

    def start(self, ticket: tuple[int, int | None]) -> None:
        if self.limiter:
            self.limiter.start(ticket[0])

    async def release(self, ticket: tuple[int, int | None]) -> None:
        if self.limiter:
            self.limiter.release(ticket[0])
        if self.cluster is not None:
            await self.cluster.release(ticket[1])
