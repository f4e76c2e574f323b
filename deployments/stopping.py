"""Graceful stop: drain the ingress, then let Serve take the application down.

Deleting a Serve application under load is not graceful by itself. Replicas do wait for the requests
they are serving, but a request still queued in a router (every replica at ``max_ongoing_requests``)
waits for a replica that never comes, and its client hangs until its own timeout. So a stop first
*drains*: every ingress replica refuses new chats with 503 SERVICE_STOPPING (and reports itself
unhealthy on /healthz), which also answers whatever was queued; when every replica has reported no run
in flight for ``SETTLE_S``, the application is deleted and the audit writer flushes on its way out.

Why wait ``SETTLE_S`` after the last run ends: requests queued in a router (every replica was full) are
routed again only on the router's retry backoff (at most ``RAY_SERVE_ROUTER_RETRY_MAX_BACKOFF_S``,
0.5 s in Ray 2.60). A draining replica with nothing in flight answers each at once with 503, so once it
has stayed idle for a few backoffs no request is left in any queue; deleting earlier strands them.

The signal travels through one small named actor: each ingress replica reports its runs in flight to it
every ``REPORT_INTERVAL_S`` and reads back whether its application is stopping. No per-request cost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import ray

log = logging.getLogger(__name__)

REPORT_INTERVAL_S = 0.5
# A replica that has not reported for this long is gone (scaled down, dead): it holds no runs.
STALE_AFTER_S = 5 * REPORT_INTERVAL_S
# How long every replica must stay draining with no run in flight before the application is deleted:
# four of Serve's longest router backoffs plus one report (see the module docstring).
SETTLE_S = 2.0 + REPORT_INTERVAL_S
CONTROL_NAME = "raydiag-stop-signal"
CONTROL_NAMESPACE = "raydiag"


@dataclass
class _Report:
    in_flight: int
    draining: bool
    at: float
    idle_since: float | None  # draining with nothing in flight since then


@dataclass
class _TenantSlot:
    app: str
    tenant: str
    replica: str
    at: float


# A cluster slot outlives no run: runs end within the harness's run timeout, so an older slot is one
# whose release was lost (the replica's call failed) and is dropped.
SLOT_MAX_AGE_S = 1800.0


class ClaimBook:
    """Keys claimed for a while: the first claim of a key within its window wins, repeats do not."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self._until: dict[str, float] = {}

    def claim(self, key: str, window_s: float) -> bool:
        now = self.clock()
        for k in [k for k, until in self._until.items() if until <= now]:
            del self._until[k]
        if key in self._until:
            return False
        self._until[key] = now + window_s
        return True

    def unclaim(self, key: str) -> None:
        self._until.pop(key, None)


class DrainBoard:
    """Which applications are stopping, what each of their ingress replicas last reported, and the
    per-tenant runs in flight across all of them (cluster-wide tenant caps). Runs as the one
    ``StopSignal`` actor of a cluster; the replicas' reports every ``REPORT_INTERVAL_S`` are also
    their heartbeat: the slots of a replica that stopped reporting are freed."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.stopping: set[str] = set()
        self.reports: dict[tuple[str, str], _Report] = {}
        self.slots: dict[int, _TenantSlot] = {}
        self._next_slot = 0
        self._seen: dict[tuple[str, str], float] = {}  # a replica's last report or admission
        self.claims = ClaimBook(clock)  # alert groups seen lately, across replicas (deployments/alerts.py)

    def claim(self, app: str, key: str, window_s: float) -> bool:
        return self.claims.claim(f"{app}\n{key}", window_s)

    def unclaim(self, app: str, key: str) -> None:
        self.claims.unclaim(f"{app}\n{key}")

    def acquire(self, app: str, tenant: str, replica: str, cap: int) -> int | None:
        """A slot for one more run of ``tenant`` in ``app`` if fewer than ``cap`` are in flight
        cluster-wide; None at the cap."""
        now = self.clock()
        self._seen[(app, replica)] = now  # asking is a sign of life too (before its first report)
        live = {r for (a, r), at in self._seen.items() if a == app and now - at < STALE_AFTER_S}
        for sid in [
            k for k, s in self.slots.items() if (s.app == app and s.replica not in live) or now - s.at > SLOT_MAX_AGE_S
        ]:
            del self.slots[sid]
        held = sum(1 for s in self.slots.values() if s.app == app and s.tenant == tenant)
        if held >= cap:
            return None
        self._next_slot += 1
        self.slots[self._next_slot] = _TenantSlot(app, tenant, replica, now)
        return self._next_slot

    def release(self, slot: int) -> None:
        self.slots.pop(slot, None)

    def report(self, app: str, replica: str, in_flight: int, draining: bool) -> bool:
        now = self.clock()
        self._seen[(app, replica)] = now
        before = self.reports.get((app, replica))
        idle_since = None
        if draining and in_flight == 0:
            idle_since = before.idle_since if before and before.idle_since is not None else now
        self.reports[(app, replica)] = _Report(in_flight, draining, now, idle_since)
        return app in self.stopping

    def leave(self, app: str, replica: str) -> None:
        self.reports.pop((app, replica), None)
        self._seen.pop((app, replica), None)

    def stop(self, app: str) -> None:
        self.stopping.add(app)

    def forget(self, app: str) -> None:
        self.stopping.discard(app)
        for key in [k for k in self.reports if k[0] == app]:
            del self.reports[key]
        for key in [k for k in self._seen if k[0] == app]:
            del self._seen[key]
        for sid in [k for k, slot in self.slots.items() if slot.app == app]:
            del self.slots[sid]

    def state(self, app: str) -> dict[str, Any]:
        """Live replicas, how many drain, their runs in flight, and for how long all of them have been
        draining with nothing in flight (``idle_s``)."""
        now = self.clock()
        live = [r for (a, _), r in self.reports.items() if a == app and now - r.at < STALE_AFTER_S]
        idle = [now - r.idle_since if r.idle_since is not None else 0.0 for r in live]
        return {
            "replicas": len(live),
            "draining": sum(1 for r in live if r.draining),
            "in_flight": sum(r.in_flight for r in live),
            "idle_s": round(min(idle), 2) if idle else 0.0,
        }


def is_drained(state: dict[str, Any]) -> bool:
    """Every live replica drains, none has a run, and they have stayed so for ``SETTLE_S``
    (no replica reporting at all: nothing to wait for)."""
    if state.get("replicas", 0) == 0:
        return True
    return state["draining"] == state["replicas"] and state["in_flight"] == 0 and state["idle_s"] >= SETTLE_S


StopSignal = ray.remote(num_cpus=0)(DrainBoard)


def stop_signal() -> Any:
    """The one StopSignal actor of this Ray cluster (created by whoever asks first)."""
    return StopSignal.options(
        name=CONTROL_NAME, namespace=CONTROL_NAMESPACE, lifetime="detached", get_if_exists=True
    ).remote()


class DrainWatch:
    """The ingress replica's side: report runs in flight, learn whether to drain."""

    def __init__(self, app: str, replica: str, in_flight: Any) -> None:
        self.app = app
        self.replica = replica
        self.in_flight = in_flight  # () -> int
        self.draining = False
        self._control: Any = None

    async def run(self) -> None:
        while True:
            try:
                if self._control is None:
                    self._control = stop_signal()
                self.draining = bool(
                    await self._control.report.remote(self.app, self.replica, self.in_flight(), self.draining)
                )
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the signal actor restarting: keep serving, ask again
                log.warning("stop signal unreachable: %s", type(err).__name__)
                self._control = None
            await asyncio.sleep(REPORT_INTERVAL_S)

    async def leave(self) -> None:
        if self._control is not None:
            try:
                await self._control.leave.remote(self.app, self.replica)
            except Exception:  # best effort: a stale report expires on its own
                pass


def drain(app: str, timeout_s: float = 120.0) -> dict[str, Any]:
    """Tell ``app``'s ingress replicas to refuse new chats, then wait until every one of them has
    acknowledged and has had no run in flight for ``SETTLE_S`` (or ``timeout_s`` passes). Returns
    what it saw."""
    control = stop_signal()
    ray.get(control.stop.remote(app))
    start = time.monotonic()
    state: dict[str, Any] = {}
    while time.monotonic() - start < timeout_s:
        time.sleep(REPORT_INTERVAL_S / 2)
        state = ray.get(control.state.remote(app))
        if is_drained(state):
            break
    return {**state, "drained": bool(state) and is_drained(state), "waited_s": round(time.monotonic() - start, 2)}


def graceful_stop(app: str, timeout_s: float = 120.0) -> dict[str, Any]:
    """Drain ``app``, then delete it (its replicas' shutdown flushes the audit writer)."""
    from ray import serve

    seen = drain(app, timeout_s)
    if not seen["drained"]:
        log.warning("stopping %s with %d runs still in flight after %.0fs", app, seen["in_flight"], timeout_s)
    serve.delete(app)
    ray.get(stop_signal().forget.remote(app))
    return seen
