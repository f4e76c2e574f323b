"""Per-session conversation memory: earlier questions and released answers (bounded LRU)."""

from __future__ import annotations

from collections import OrderedDict


class SessionHistory:
    def __init__(self, max_sessions: int = 10_000, max_turns: int = 20) -> None:
        self.max_sessions = max_sessions
        self.max_turns = max_turns
        self._turns: OrderedDict[str, list[tuple[str, str]]] = OrderedDict()

    def get(self, session_id: str) -> list[tuple[str, str]]:
        turns = self._turns.get(session_id)
        if turns is None:
            return []
        self._turns.move_to_end(session_id)
        return list(turns)

    def add(self, session_id: str, question: str, answer: str) -> None:
        turns = self._turns.setdefault(session_id, [])
        turns.append((question, answer))
        del turns[: -self.max_turns]
        self._turns.move_to_end(session_id)
        while len(self._turns) > self.max_sessions:
            self._turns.popitem(last=False)
