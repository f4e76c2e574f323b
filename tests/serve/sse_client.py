"""Reads an SSE response incrementally, noting when each event arrived."""

from __future__ import annotations

import time
from typing import Any

import httpx

from deployments.sse import parse


async def chat(client: httpx.AsyncClient, session: str, question: str) -> list[tuple[str, dict[str, Any], float]]:
    events: list[tuple[str, dict[str, Any], float]] = []
    start = time.monotonic()
    async with client.stream("POST", "/api/chat", json={"Id": session, "Question": question}) as resp:
        assert resp.status_code == 200, await resp.aread()
        assert resp.headers["content-type"].startswith("text/event-stream")
        buf = ""
        async for chunk in resp.aiter_text():
            buf += chunk
            while "\n\n" in buf:
                block, buf = buf.split("\n\n", 1)
                for name, data in parse(block + "\n\n"):
                    events.append((name, data, time.monotonic() - start))
    return events
