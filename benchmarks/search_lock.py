"""The search deployment with and without its one-call-at-a-time lock, against a Milvus server.

Until issue 18 the search deployment serialised every query behind an ``asyncio.Lock``, which only
embedded Milvus Lite needs; with a server URI it now lets concurrent lookups through. This measures
what that is worth: the deployment's own ``search`` (dense path: Milvus ANN + fetch + post-process in
a worker thread) called by ``--concurrency`` concurrent callers, lookups/s and latency, once without the
lock (the server path now) and once with it (the old behaviour), alternated twice in one run.

The dense path only: the Milvus server that installs from PyPI here (``milvus`` 2.3.5, "embedded
Milvus", a real standalone server) predates BM25 functions, so the collection is dense-only (the
service's schema minus the analysed copies and sparse fields). The index holds real text chunked as the
service chunks (1,500 characters; ``rag_latency.corpus_chunks``) embedded by the service's CPU model.

    python -m venv /tmp/mv && /tmp/mv/bin/pip install milvus==2.3.5
    # start it with every component's advertised ip at 127.0.0.1 (see the note in search_lock.json)
    python benchmarks/search_lock.py --uri http://127.0.0.1:19611 [--chunks 3000] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import rag_latency  # noqa: E402

from deployments.provenance import stamp  # noqa: E402
from deployments.search import SearchDeployment  # noqa: E402
from rag.embedding import Usem3Embedder  # noqa: E402
from rag.store import MAX_TEXT, FusionSettings, KnowledgeStore  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "search_lock.json"
COLLECTION = "raydiag_search_lock_bench"


class DenseOnlyStore(KnowledgeStore):
    """The service's collection without what a 2.3 server lacks (analysed text, BM25 sparse fields)."""

    def _ensure(self, rebuild_outdated: bool) -> None:
        from pymilvus import DataType

        c = self.client
        if c.has_collection(self.collection):
            c.drop_collection(self.collection)
        s = self.chunk_schema()
        s.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT)
        s.add_field("text_en", DataType.VARCHAR, max_length=MAX_TEXT)
        s.add_field("dense", DataType.FLOAT_VECTOR, dim=self.dim)
        idx = c.prepare_index_params()
        idx.add_index("dense", index_type="HNSW", metric_type="IP", params={"M": 16, "efConstruction": 200})
        c.create_collection(self.collection, schema=s, index_params=idx)

    HIT_KEY = "id"  # a 2.3 server returns the primary key as "id" (newer ones under its field name)


async def measure(dep: Any, queries: list[tuple[str, Any]], concurrency: int) -> dict[str, float]:
    latencies: list[float] = []
    todo = iter(queries)

    async def caller() -> None:
        for text, vec in todo:
            t0 = time.perf_counter()
            hits = await dep.search(text, vec, None, "dense", 20, None)
            latencies.append(time.perf_counter() - t0)
            assert hits, "a dense lookup found nothing"

    t0 = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    elapsed = time.perf_counter() - t0
    lat = sorted(latencies)
    return {
        "lookups_per_s": round(len(queries) / elapsed, 1),
        "p50_ms": round(statistics.median(lat) * 1000, 1),
        "p95_ms": round(lat[int(len(lat) * 0.95) - 1] * 1000, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--uri", required=True, help="a Milvus server, e.g. http://127.0.0.1:19611")
    ap.add_argument("--chunks", type=int, default=3000)
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()

    embedder = Usem3Embedder()
    chunks = rag_latency.corpus_chunks(args.chunks, 1500)
    store = DenseOnlyStore(args.uri, COLLECTION, embedder.dim)
    for i in range(0, len(chunks), 256):
        part = chunks[i : i + 256]
        store.insert_chunks(part, embedder.encode_sync([c.embed_text for c in part]))
    store.finish_ingest()
    texts = rag_latency.queries(args.queries)
    vectors = embedder.embed_sync(texts)
    queries = list(zip(texts, vectors, strict=True))

    cls = SearchDeployment.func_or_class
    dep = cls.__new__(cls)
    dep.store, dep.fusion, dep._lock = store, FusionSettings(), None
    # The deployment's constructor sets no lock for a server URI ("://"); the old code always set one.

    async def run() -> dict[str, list[dict[str, float]]]:
        out: dict[str, list[dict[str, float]]] = {"no_lock": [], "lock": []}
        await measure(dep, queries[:40], args.concurrency)  # warm-up
        for _ in range(2):
            for name, lock in (("no_lock", None), ("lock", asyncio.Lock())):
                dep._lock = lock
                out[name].append(await measure(dep, queries, args.concurrency))
                print(name, out[name][-1], flush=True)
        return out

    results = asyncio.run(run())
    version = store.client.get_server_version()
    store.client.drop_collection(COLLECTION)
    best = {k: max(r["lookups_per_s"] for r in v) for k, v in results.items()}
    out = {
        "server": f"Milvus {version} (PyPI `milvus` 2.3.5, standalone, loopback)",
        "chunks": len(chunks),
        "queries": len(queries),
        "concurrency": args.concurrency,
        "mode": "dense",
        "results": results,
        "speedup": round(best["no_lock"] / best["lock"], 2),
        **stamp(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
