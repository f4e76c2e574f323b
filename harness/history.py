"""Per-session conversation memory: earlier questions and released answers (bounded LRU).

Keyed by (tenant, session): a session id is chosen by the client, so two tenants may send the same
one, and neither may see the other's turns in its prompts.
"""

from __future__ import annotations

from collections import OrderedDict

SessionKey = tuple[str, str]  # (tenant id, "" without authentication; session id)


def session_key(tenant_id: str | None, session_id: str) -> SessionKey:
    return (tenant_id or "", session_id)


class SessionHistory:
    def __init__(self, max_sessions: int = 10_000, max_turns: int = 20) -> None:
        self.max_sessions = max_sessions
        self.max_turns = max_turns
        self._turns: OrderedDict[SessionKey, list[tuple[str, str]]] = OrderedDict()

    def get(self, key: SessionKey) -> list[tuple[str, str]]:
        turns = self._turns.get(key)
        if turns is None:
            return []
        self._turns.move_to_end(key)
        return list(turns)

    def add(self, key: SessionKey, question: str, answer: str) -> None:
        turns = self._turns.setdefault(key, [])
        turns.append((question, answer))
        del turns[: -self.max_turns]
        self._turns.move_to_end(key)
        while len(self._turns) > self.max_sessions:
            self._turns.popitem(last=False)
