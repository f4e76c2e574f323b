"""The embedder deployment: requests from many concurrent lookups are batched with @serve.batch."""

from __future__ import annotations

import numpy as np
from ray import serve

from rag.embedding import make_embedder


@serve.deployment(name="embedder", max_ongoing_requests=128)
class EmbedderDeployment:
    def __init__(self, backend: str, max_batch_size: int, batch_wait_timeout_s: float) -> None:
        self.embedder = make_embedder(backend)
        self.dim = self.embedder.dim
        self.batch_sizes: list[int] = []
        # Batch limits come from config, so they are set on the bound method per replica.
        self.embed_one.set_max_batch_size(max_batch_size)  # type: ignore[attr-defined]
        self.embed_one.set_batch_wait_timeout_s(batch_wait_timeout_s)  # type: ignore[attr-defined]

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.01)
    async def embed_one(self, texts: list[str]) -> list[np.ndarray]:
        self.batch_sizes.append(len(texts))
        vectors = await self.embedder.embed(texts)
        return list(vectors)

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Embed several texts; each goes through the batcher so concurrent callers share batches."""
        import asyncio

        return np.stack(await asyncio.gather(*(self.embed_one(t) for t in texts)))

    async def stats(self) -> dict[str, object]:
        return {
            "batches": len(self.batch_sizes),
            "max_batch": max(self.batch_sizes, default=0),
            "mean_batch": float(np.mean(self.batch_sizes)) if self.batch_sizes else 0.0,
        }
