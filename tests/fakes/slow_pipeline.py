"""Pipelines that pace the real one: each event after ``metadata`` waits ``delay_s``.

Used by the serve tests to show that SSE events reach the client as they happen, not at the end, and
to keep a run in flight long enough for a test to act while it is (admission caps, replicas).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from harness.contracts import ChatRequest, SseEvent
from harness.pipeline import DiagnosisPipeline
from harness.scope import RunOptions


class PacedPipeline(DiagnosisPipeline):
    """The real pipeline with its configured model (the scripted one in the tests), paced."""

    delay_s = 0.15

    async def run(
        self, request: ChatRequest, tenant_id: str | None = None, options: RunOptions | None = None
    ) -> AsyncGenerator[SseEvent, None]:
        async for event in super().run(request, tenant_id, options):
            if event.event != "metadata":
                await asyncio.sleep(self.delay_s)
            yield event


class SlowPipeline(PacedPipeline):
    """Paces the model-less pipeline (the serve tests of the LLM talk to the engine directly)."""

    delay_s = 0.4

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs["model"] = None
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
