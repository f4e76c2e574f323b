"""A pipeline that paces the real one: each event after ``metadata`` waits ``delay_s``.

Used by the serve tests to show that SSE events reach the client as they happen, not at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from harness.contracts import ChatRequest, SseEvent
from harness.pipeline import DiagnosisPipeline


class SlowPipeline(DiagnosisPipeline):
    delay_s = 0.4

    async def run(self, request: ChatRequest, tenant_id: str | None = None) -> AsyncGenerator[SseEvent, None]:
        async for event in super().run(request, tenant_id):
            if event.event != "metadata":
                await asyncio.sleep(self.delay_s)
            yield event
