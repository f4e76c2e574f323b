"""The service's lookup in this process, over the configured store and embedder: what the evaluations
that measure retrieval alone call (no Ray, no deployments), with the service's own settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rag.embedders import embedder_for
from rag.lookup import KnowledgeLookupService
from rag.store import KnowledgeStore

if TYPE_CHECKING:
    from rag.settings import SearchSettings


def in_process_lookup(s: SearchSettings) -> tuple[KnowledgeLookupService, KnowledgeStore]:
    """The lookup and the store it reads (the caller closes the store: Milvus Lite's file is one process's)."""
    embedder = embedder_for(s)
    store = KnowledgeStore(s.milvus_uri, s.collection, embedder.dim, embedder.sparse)

    async def embed(texts: list[str]) -> Any:
        return embedder.encode_sync(texts)

    async def search(q: str, qvec: Any, qlex: Any, mode: Any, limit: int, domains: Any, gvec: Any) -> Any:
        return store.search(q, qvec, mode, limit, domains, s.fusion, qlex, gvec)

    async def doc_chunks(doc_id: str, qvec: Any) -> Any:
        return store.doc_chunks(doc_id, qvec)

    return KnowledgeLookupService(embed, search, s.lookup(), doc_chunks), store
