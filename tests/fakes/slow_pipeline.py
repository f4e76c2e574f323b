"""A pipeline that paces the real one: each event after ``metadata`` waits ``delay_s``.

Used by the serve tests to show that SSE events reach the client as they happen, not at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from harness.contracts import ChatRequest, SseEvent
from harness.pipeline import DiagnosisPipeline
from harness.scope import RunOptions


class SlowPipeline(DiagnosisPipeline):
    """Paces the model-less pipeline (the serve tests of the LLM talk to the engine directly)."""

    delay_s = 0.4

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["model"] = None
        super().__init__(*args, **kwargs)

    async def run(
        self, request: ChatRequest, tenant_id: str | None = None, options: RunOptions | None = None
    ) -> AsyncGenerator[SseEvent, None]:
        async for event in super().run(request, tenant_id, options):
            if event.event != "metadata":
                await asyncio.sleep(self.delay_s)
            yield event
