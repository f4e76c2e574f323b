"""Per-session conversation memory: earlier questions and released answers (bounded LRU).

Keyed by (tenant, session): a session id is chosen by the client, so two tenants may send the same
one, and neither may see the other's turns in its prompts. ``SessionHistory`` keeps the turns in this
process; a service with several ingress replicas gives the pipeline a store that every replica shares
(deployments/session_memory.py) behind the same two calls.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Protocol

SessionKey = tuple[str, str]  # (tenant id, "" without authentication; session id)
Turn = tuple[str, str]  # (question, released answer)


def session_key(tenant_id: str | None, session_id: str) -> SessionKey:
    return (tenant_id or "", session_id)


class HistoryStore(Protocol):
    async def get(self, key: SessionKey) -> list[Turn]: ...

    async def add(self, key: SessionKey, question: str, answer: str) -> None: ...


class SessionHistory:
    """The turns in memory, least recently used sessions forgotten first."""

    def __init__(self, max_sessions: int = 10_000, max_turns: int = 20) -> None:
        self.max_sessions = max_sessions
        self.max_turns = max_turns
        self._turns: OrderedDict[SessionKey, list[Turn]] = OrderedDict()

    def get_now(self, key: SessionKey) -> list[Turn]:
        turns = self._turns.get(key)
        if turns is None:
            return []
        self._turns.move_to_end(key)
        return list(turns)

    def add_now(self, key: SessionKey, question: str, answer: str) -> None:
        turns = self._turns.setdefault(key, [])
        turns.append((question, answer))
        del turns[: -self.max_turns]
        self._turns.move_to_end(key)
        while len(self._turns) > self.max_sessions:
            self._turns.popitem(last=False)

    async def get(self, key: SessionKey) -> list[Turn]:
        return self.get_now(key)

    async def add(self, key: SessionKey, question: str, answer: str) -> None:
        self.add_now(key, question, answer)
