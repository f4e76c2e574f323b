"""Tools that replay recorded outputs, one recording per tool call id (recorded incident cases)."""

from __future__ import annotations

from typing import Any

from harness.tools.base import ToolResult


class ReplayTool:
    def __init__(self, name: str, recordings: dict[str, dict[str, Any]]) -> None:
        self.name = name
        self.description = f"{name} (replayed)"
        self.parameters: dict[str, Any] = {"type": "object"}
        self.recordings = recordings
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        self.calls.append((call_id, args))
        rec = self.recordings.get(call_id)
        if rec is None:
            return ToolResult("error", {"error": f"no recording for {call_id}"}, error="no recording")
        if rec.get("raise"):
            raise RuntimeError(rec["raise"])
        return ToolResult(
            rec.get("status", "success"),
            rec.get("output", {}),
            preview=rec.get("preview", ""),
            error=rec.get("error"),
            retrieval=rec.get("retrieval", {}),
        )
