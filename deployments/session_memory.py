"""Session memory shared by every ingress replica: one named, detached Ray actor per application
holds the (tenant, session) turns (harness/history.py's ``SessionHistory``).

- Every replica reads and writes the same turns, so a follow-up routed to another replica sees the
  conversation; the turns outlive an ingress restart or scale-down (not a Ray cluster restart: the
  released answers stay in the audit trail).
- Read-your-writes: the pipeline adds a run's turn before it sends ``done``, and a client asks its
  next question after ``done``, so turn N+1 on any replica finds turn N.
- Nothing waits on it beyond ``timeout_s``: a store that does not answer (the actor restarting, the
  node gone) means a chat without history, never a failed chat.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import ray

from harness.history import SessionHistory, SessionKey, Turn

log = logging.getLogger(__name__)

NAMESPACE = "raydiag"


# The actor is the in-process store itself; keys and turns cross Ray as the tuples they are.
MemoryActor = ray.remote(num_cpus=0, max_restarts=-1)(SessionHistory)


def memory_actor(app_name: str, max_sessions: int = 10_000, max_turns: int = 20) -> Any:
    """The application's one memory actor (created by whichever replica asks first)."""
    return MemoryActor.options(
        name=f"raydiag-session-memory-{app_name}",
        namespace=NAMESPACE,
        lifetime="detached",
        get_if_exists=True,
    ).remote(max_sessions, max_turns)


class SharedHistory:
    """The pipeline's ``HistoryStore`` over the memory actor, bounded and failure-tolerant."""

    def __init__(self, actor: Any, timeout_s: float = 0.5) -> None:
        self.actor = actor
        self.timeout_s = timeout_s
        self.failures = 0

    async def get(self, key: SessionKey) -> list[Turn]:
        try:
            turns: list[Turn] = await asyncio.wait_for(self.actor.get_now.remote(key), self.timeout_s)
            return turns
        except Exception as err:
            self.failures += 1
            log.warning("session memory unavailable (%s): this run goes without history", type(err).__name__)
            return []

    async def add(self, key: SessionKey, question: str, answer: str) -> None:
        try:
            await asyncio.wait_for(self.actor.add_now.remote(key, question, answer), self.timeout_s)
        except Exception as err:
            self.failures += 1
            log.warning("session memory unavailable (%s): this turn is not remembered", type(err).__name__)
