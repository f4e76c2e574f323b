"""Tools that replay recorded outputs, one recording per tool call id (recorded incident cases)."""

from __future__ import annotations

from typing import Any

from harness.tools.base import ToolResult


class ReplayTool:
    """``by_name=False``: the recording of the model's call id (a scripted model names the ids).
    ``by_name=True``: this tool's recordings in order, whatever the call id (the default flow's playbook
    makes its own ids); ``answered`` maps each call id to the recording that answered it."""

    def __init__(self, name: str, recordings: dict[str, dict[str, Any]], by_name: bool = False) -> None:
        self.name = name
        self.description = f"{name} (replayed)"
        self.parameters: dict[str, Any] = {"type": "object"}
        self.recordings = recordings
        self.by_name = by_name
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.answered: dict[str, dict[str, Any]] = {}

    def _recording(self, call_id: str) -> dict[str, Any] | None:
        if not self.by_name:
            return self.recordings.get(call_id)
        unused = [rec for rec in self.recordings.values() if not any(rec is r for r in self.answered.values())]
        return unused[0] if unused else None

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        self.calls.append((call_id, args))
        rec = self._recording(call_id)
        if rec is None:
            return ToolResult("error", {"error": f"no recording for {call_id}"}, error="no recording")
        self.answered[call_id] = rec
        if rec.get("raise"):
            raise RuntimeError(rec["raise"])
        return ToolResult(
            rec.get("status", "success"),
            rec.get("output", {}),
            preview=rec.get("preview", ""),
            error=rec.get("error"),
            retrieval=rec.get("retrieval", {}),
        )
