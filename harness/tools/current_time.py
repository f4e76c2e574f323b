"""current_time: the service's clock, so the model can reason about 'the last 15 minutes'."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from harness.tools.base import ToolResult


class CurrentTimeTool:
    name = "current_time"
    description = "Return the current date and time in UTC (ISO 8601)."
    parameters: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

    def __init__(self, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.now = now

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        now = self.now().isoformat()
        return ToolResult("success", {"utc_now": now}, preview=now)
