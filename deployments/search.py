"""The search deployment: owns the Milvus client. With Milvus Lite the data dir belongs to one
process, so this is one replica; with a Milvus server URI it can scale out."""

from __future__ import annotations

import asyncio

import numpy as np
from ray import serve

from rag.store import FusionSettings, Hit, KnowledgeStore, SearchMode


@serve.deployment(name="search", num_replicas=1, max_ongoing_requests=64)
class SearchDeployment:
    def __init__(
        self, uri: str, collection: str, dim: int, lexical: bool = False, fusion: FusionSettings | None = None
    ) -> None:
        self.store = KnowledgeStore(uri, collection, dim, lexical)
        self.fusion = fusion or FusionSettings()
        self._lock = asyncio.Lock()  # Milvus Lite's client is not safe across threads

    async def search(
        self,
        query: str,
        qvec: np.ndarray,
        qlex: dict[int, float] | None,
        mode: SearchMode,
        limit: int,
        domains: list[str] | None,
    ) -> list[Hit]:
        async with self._lock:
            return await asyncio.to_thread(self.store.search, query, qvec, mode, limit, domains, self.fusion, qlex)

    async def count(self) -> int:
        async with self._lock:
            return await asyncio.to_thread(self.store.count)
