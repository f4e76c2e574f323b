"""Run under the BGE-M3 environment (.venv-bge): encode with the real BGEM3FlagModel on a tiny model,
put dense + lexical vectors into Milvus Lite, search all three lists, print what happened as JSON.
tests/rag/test_bge_m3.py runs it and asserts on the output."""

from __future__ import annotations

import asyncio
import json
import sys

import transformers

from rag.bge_m3 import BgeM3Embedder
from rag.chunking import chunk_document
from rag.embedding import Encoded
from rag.store import KnowledgeStore

DOCS = {
    "pool": "# Pool\n\ndatabase connection pool exhausted hikari timeout",
    "gc": "# GC\n\njvm full gc heap out of memory",
    "zh": "# 连接池\n\n数据库 连接池 耗尽 超时",
}


async def main(model_dir: str, milvus: str) -> None:
    emb = BgeM3Embedder(model_dir, device="cpu")
    store = KnowledgeStore(milvus, "bge", emb.dim, lexical=emb.sparse)
    chunks = [c for d, t in DOCS.items() for c in chunk_document(d, t, domain="test", source=d)]
    enc: Encoded = await emb.encode([c.embed_text for c in chunks])
    store.insert_chunks(chunks, enc)
    store.finish_ingest()
    q = await emb.encode(["hikari connection pool timeout"])
    assert q.lexical is not None
    ranked = store.rank("hikari connection pool timeout", q.dense[0], "hybrid", 3, qlex=q.lexical[0])
    hits = store.search("hikari connection pool timeout", q.dense[0], "hybrid", 3, qlex=q.lexical[0])
    rows = store.client.query("bge", filter="chunk_index >= 0", output_fields=["key", "lexical"])
    out = {
        "transformers": transformers.__version__,
        "dim": emb.dim,
        "dense_norms": [float(x) for x in (enc.dense**2).sum(axis=1)],
        "lexical_types": sorted(
            {f"{type(k).__name__}:{type(v).__name__}" for w in enc.lexical or [] for k, v in w.items()}
        ),
        "lexical_sizes": [len(w) for w in enc.lexical or []],
        "stored_lexical": {r["key"]: len(r["lexical"]) for r in rows},
        "ranked_modes": [sorted(r.ranks) for r in ranked],
        "top": hits[0].doc_id if hits else None,
    }
    store.close()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
