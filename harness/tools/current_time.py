"""current_time: the run's clock, so the model can reason about 'the last 15 minutes'. A run replaying
a past incident (the RCA evaluation, an alert) stands at that incident's time, not the wall clock's."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from harness.tools.base import ToolResult
from telemetry.clock import iso


class CurrentTimeTool:
    name = "current_time"
    description = "Return the current date and time in UTC (RFC 3339): the run's clock."
    parameters: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self.now = now

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        now = iso(self.now())
        return ToolResult("success", {"utc_now": now}, preview=now)
