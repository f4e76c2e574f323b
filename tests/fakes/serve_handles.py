"""Stand-ins for the Serve handles the ingress's /v1 routes call (the LLM and embedder deployments), for
tests of the routes themselves. They answer what a script says and keep what they were asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np


class StreamCall:
    """What a streaming handle call returns: an async iterator that can be cancelled."""

    def __init__(self, gen: AsyncIterator[dict[str, Any]]) -> None:
        self.gen = gen
        self.cancelled = False

    def __aiter__(self) -> StreamCall:
        return self

    async def __anext__(self) -> dict[str, Any]:
        return await self.gen.__anext__()

    def cancel(self) -> None:
        self.cancelled = True


class Method:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> Any:
        out = self.fn(*args)
        return StreamCall(out) if hasattr(out, "__anext__") else out


class ScriptedLLMHandle:
    """The LLM deployment's surface for /v1: ``models`` and ``stream_chat`` (the reply in two-character
    deltas, then the finish reason and usage). ``calls`` keeps (messages, max_tokens, sampling, schema)."""

    def __init__(self, reply: str = "pong", gate: asyncio.Event | None = None, usage: tuple[int, int] = (5, 2)) -> None:
        self.reply = reply
        self.gate = gate
        self.usage = usage
        self.models = Method(self._models)
        self.stream_chat = Method(self._stream)
        self.calls: list[tuple[Any, ...]] = []

    def options(self, **_: Any) -> ScriptedLLMHandle:
        return self

    async def _models(self) -> list[str]:
        return ["tiny"]

    async def _stream(self, *args: Any) -> AsyncIterator[dict[str, Any]]:
        self.calls.append(args)
        if self.gate is not None:
            await self.gate.wait()
        for i in range(0, len(self.reply), 2):
            yield {"delta": self.reply[i : i + 2]}
        prompt, completion = self.usage
        yield {"finish_reason": "stop", "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}


class FakeEmbedderHandle:
    """The embedder deployment's surface for /v1/embeddings: a 4-dimensional vector per text, from its
    length, and one token per word."""

    def __init__(self) -> None:
        self.info = Method(self._info)
        self.embed_for_api = Method(self._embed)

    async def _info(self) -> dict[str, Any]:
        return {"dim": 4, "sparse": False, "backend": "Fake", "model": "usem3"}

    async def _embed(self, texts: list[str]) -> dict[str, Any]:
        rows = np.array([[len(t), 1.0, 0.5, -0.25] for t in texts], dtype=np.float32)
        return {"dense": rows, "tokens": sum(len(t.split()) for t in texts)}
