"""The knowledge collection in Milvus: schema, idempotent ingest, dense / BM25 / hybrid search.

Milvus Lite (a file path) is the embedded default; ``http://host:19530`` points the same code at a
Milvus server. Text is analysed with jieba so Chinese gets BM25 hits (the standard analyser gives
none). Filters are built only from validated domain names of our own vocabulary: Milvus Lite 3.2
rejects templated expressions (`{param}`), so user text never reaches an expression.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rag.chunking import Chunk

SearchMode = Literal["hybrid", "dense", "bm25"]
_DOMAIN = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
_DOC_ID = re.compile(r"^[a-z0-9\u4e00-\u9fff][a-z0-9_\-\u4e00-\u9fff]{0,255}$")
MAX_TEXT = 8192


@dataclass
class Hit:
    key: str
    doc_id: str
    title: str
    heading: str
    text: str
    domain: str
    score: float  # RRF score (hybrid), IP (dense) or BM25
    similarity: float  # dense cosine similarity to the query: the quality gate


def domain_filter(domains: list[str] | None) -> str | None:
    if not domains:
        return None
    bad = [d for d in domains if not _DOMAIN.match(d)]
    if bad:
        raise ValueError(f"invalid domain names: {bad}")
    return f"domain in {json.dumps(sorted(set(domains)))}"


class KnowledgeStore:
    def __init__(self, uri: str, collection: str, dim: int) -> None:
        from pymilvus import MilvusClient

        if "://" not in uri:
            Path(uri).parent.mkdir(parents=True, exist_ok=True)
        self.client = MilvusClient(uri)
        self.uri = uri
        self.collection = collection
        self.dim = dim
        self._ensure()

    def _ensure(self) -> None:
        from pymilvus import DataType, Function, FunctionType

        c = self.client
        if c.has_collection(self.collection):
            c.load_collection(self.collection)
            return
        s = c.create_schema(auto_id=False, enable_dynamic_field=False)
        s.add_field("key", DataType.VARCHAR, is_primary=True, max_length=300)
        s.add_field("doc_id", DataType.VARCHAR, max_length=256)
        s.add_field("chunk_index", DataType.INT64)
        s.add_field("domain", DataType.VARCHAR, max_length=64)
        s.add_field("title", DataType.VARCHAR, max_length=512)
        s.add_field("heading", DataType.VARCHAR, max_length=1024)
        s.add_field("source", DataType.VARCHAR, max_length=1024)
        s.add_field(
            "text", DataType.VARCHAR, max_length=MAX_TEXT, enable_analyzer=True, analyzer_params={"tokenizer": "jieba"}
        )
        s.add_field("dense", DataType.FLOAT_VECTOR, dim=self.dim)
        s.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        s.add_function(
            Function(
                name="bm25", function_type=FunctionType.BM25, input_field_names=["text"], output_field_names=["sparse"]
            )
        )
        idx = c.prepare_index_params()
        idx.add_index("dense", index_type="HNSW", metric_type="IP", params={"M": 16, "efConstruction": 200})
        idx.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        c.create_collection(self.collection, schema=s, index_params=idx)

    # -- ingest -------------------------------------------------------------------------------

    def replace_document(self, doc_id: str, chunks: list[Chunk], vectors: np.ndarray) -> None:
        self.replace_documents([(doc_id, chunks, vectors)])

    def replace_documents(self, docs: list[tuple[str, list[Chunk], np.ndarray]]) -> None:
        """Idempotent: the documents' old chunks go, the new ones come (one delete, one insert per call)."""
        ids = [d for d, _, _ in docs]
        bad = [d for d in ids if not _DOC_ID.match(d)]
        if bad:
            raise ValueError(f"invalid document ids: {bad[:3]}")
        if ids:
            self.client.delete(self.collection, filter=f"doc_id in {json.dumps(ids, ensure_ascii=False)}")
        rows = [
            {
                "key": ch.key,
                "doc_id": ch.doc_id,
                "chunk_index": ch.index,
                "domain": ch.domain,
                "title": ch.title[:512],
                "heading": ch.heading[:1024],
                "source": ch.source[:1024],
                "text": ch.embed_text[:MAX_TEXT],
                "dense": vec.tolist(),
            }
            for _, chunks, vectors in docs
            for ch, vec in zip(chunks, vectors, strict=True)
        ]
        if rows:
            self.client.insert(self.collection, rows)

    def finish_ingest(self) -> None:
        """Flush, then release + load: searches before that were ~100x slower (DESIGN.md §6)."""
        from pymilvus.exceptions import MilvusException

        self.client.flush(self.collection)
        # Milvus Lite builds the new segment's index in the background; a load that races it fails
        # reading a half-written index file ("Resource temporarily unavailable"). Retry for a while.
        delay = 0.2
        for attempt in range(12):
            try:
                self.client.release_collection(self.collection)
                self.client.load_collection(self.collection)
                return
            except MilvusException:
                if attempt == 11:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def count(self) -> int:
        res = self.client.query(self.collection, filter="chunk_index >= 0", output_fields=["count(*)"])
        return int(res[0]["count(*)"])

    def close(self) -> None:
        """Close the client and, for Milvus Lite, stop its server so another process can open the dir."""
        self.client.close()
        if "://" not in self.uri:
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(self.uri)

    def drop(self) -> None:
        self.client.drop_collection(self.collection)

    # -- search -------------------------------------------------------------------------------

    _FIELDS = ["doc_id", "title", "heading", "text", "domain", "dense"]

    def _hits(self, raw: list[Any], qvec: np.ndarray) -> list[Hit]:
        out = []
        for h in raw:
            e = h["entity"]
            sim = float(np.dot(np.asarray(e["dense"], dtype=np.float32), qvec))
            out.append(
                Hit(
                    str(h["key"] if "key" in h.keys() else h["id"]),  # the primary key, by its field name
                    e["doc_id"],
                    e["title"],
                    e["heading"],
                    e["text"],
                    e["domain"],
                    float(h["distance"]),
                    sim,
                )
            )
        return out

    def search(
        self, query: str, qvec: np.ndarray, mode: SearchMode, limit: int, domains: list[str] | None = None
    ) -> list[Hit]:
        from pymilvus import AnnSearchRequest, RRFRanker

        expr = domain_filter(domains)
        dense_req = {
            "data": [qvec.tolist()],
            "anns_field": "dense",
            "param": {"metric_type": "IP", "params": {"ef": 64}},
            "limit": limit,
        }
        bm25_req = {"data": [query], "anns_field": "sparse", "param": {"metric_type": "BM25"}, "limit": limit}
        if mode == "hybrid":
            reqs = [AnnSearchRequest(**dense_req, expr=expr), AnnSearchRequest(**bm25_req, expr=expr)]
            raw = self.client.hybrid_search(
                self.collection, reqs, ranker=RRFRanker(60), limit=limit, output_fields=self._FIELDS
            )
        else:
            r = dense_req if mode == "dense" else bm25_req
            raw = self.client.search(
                self.collection,
                data=r["data"],
                anns_field=r["anns_field"],
                limit=limit,
                search_params=r["param"],
                filter=expr or "",
                output_fields=self._FIELDS,
            )
        return self._hits(raw[0], qvec)
