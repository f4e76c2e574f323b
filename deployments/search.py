"""The search deployment: owns the Milvus client. With Milvus Lite the data dir belongs to one
process, so this is one replica; with a Milvus server URI it can scale out."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import numpy as np
from ray import serve

from rag.packs import loaded_packs
from rag.store import FusionSettings, Hit, KnowledgeStore, SearchMode


@serve.deployment(name="search", num_replicas=1, max_ongoing_requests=64)
class SearchDeployment:
    def __init__(
        self, uri: str, collection: str, dim: int, lexical: bool = False, fusion: FusionSettings | None = None
    ) -> None:
        self.store = KnowledgeStore(uri, collection, dim, lexical)
        self.uri, self.collection = uri, collection
        self.fusion = fusion or FusionSettings()
        # Milvus Lite's embedded client is not safe across threads: one call at a time. A Milvus
        # server's gRPC client is, and serialising every lookup there would cap a replica at one.
        self._lock: asyncio.Lock | None = None if "://" in uri else asyncio.Lock()

    def _one_at_a_time(self) -> Any:
        return self._lock if self._lock is not None else contextlib.nullcontext()

    async def search(
        self,
        query: str,
        qvec: np.ndarray,
        qlex: dict[int, float] | None,
        mode: SearchMode,
        limit: int,
        domains: list[str] | None,
        gvec: np.ndarray | None = None,
    ) -> list[Hit]:
        async with self._one_at_a_time():
            return await asyncio.to_thread(
                self.store.search, query, qvec, mode, limit, domains, self.fusion, qlex, gvec
            )

    async def doc_chunks(self, doc_id: str, qvec: np.ndarray) -> list[Hit]:
        async with self._one_at_a_time():
            return await asyncio.to_thread(self.store.doc_chunks, doc_id, qvec)

    async def count(self) -> int:
        async with self._one_at_a_time():
            return await asyncio.to_thread(self.store.count)

    async def knowledge(self) -> dict[str, Any]:
        """What /healthz says of the knowledge base: its chunks and the packs ingested into it."""
        return {"chunks": await self.count(), "packs": sorted(loaded_packs(self.uri, self.collection))}
