"""The knowledge base ``make run`` serves: the default knowledge packs, their size, what ingesting them
costs on a fresh machine and on every later start, and what a lookup costs at that size.

* ``packs``: each default pack's documents and chunks (as ``search.chunk_max_chars`` chunks them).
* ``ingest_cold_s``: ``raydiag ingest --packs default`` into an empty collection with an empty embedding
  cache (a fresh machine's first ``make run``); ``ingest_warm_s``: the same into another empty collection
  with the cache it left (every benchmark's scratch knowledge base); ``ingest_restart_s``: the same again into
  that collection (every later ``make run``: the packs are unchanged and not re-inserted).
* ``lookup_ms``: the service's lookup (embed + Milvus Lite hybrid search + post-processing, in this
  process) of each question of the correctness set, p50 and p95, over the ingested collection.

    python benchmarks/knowledge_packs.py

Results: ``benchmarks/results/knowledge_packs.json`` (``--out``), with commit and command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.provenance import stamp  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "knowledge_packs.json"
QUESTIONS = ROOT / "benchmarks" / "data" / "diagnosis_truth.json"


def pack_sizes(max_chars: int) -> list[dict[str, Any]]:
    from rag.chunking import chunk_file
    from rag.ingest import pack_documents
    from rag.packs import load_packs, select_packs

    rows = []
    for pack in select_packs(["default"], load_packs()):
        docs = pack_documents([pack])
        chunks = sum(len(chunk_file(d.path, d.domain, max_chars, d.text, d.source)) for d in docs)
        rows.append(
            {"pack": pack.name, "documents": len(docs), "chunks": chunks, "license": pack.license, "langs": pack.langs}
        )
    return rows


def ingest(work: Path, name: str, cache: Path) -> float:
    """``raydiag ingest --packs default`` into a collection of its own, as ``make run`` runs it."""
    config = work / f"{name}.yaml"
    search = {"milvus_uri": str(work / f"{name}.db"), "embedding_cache": str(cache)}
    config.write_text(yaml.safe_dump({"search": search}), encoding="utf-8")
    started = time.perf_counter()
    cmd = [sys.executable, "-m", "cli.main", "--config", str(config), "ingest", "--packs", "default"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ingest failed: {done.stderr[-2000:]}")
    seconds = time.perf_counter() - started
    print(done.stdout.strip().splitlines()[-1], f"({seconds:.0f} s)", flush=True)
    return seconds


def lookup_latency(milvus_uri: str) -> dict[str, float]:
    from rag.in_process import in_process_lookup
    from rag.settings import SearchSettings

    lookup, store = in_process_lookup(SearchSettings(milvus_uri=milvus_uri))
    questions = [c["q"] for c in json.loads(QUESTIONS.read_text(encoding="utf-8"))["cases"]]

    async def run() -> list[float]:
        await lookup.lookup(questions[0], "warm-up")  # loads the gloss dictionary once
        times = []
        for q in questions:
            started = time.perf_counter()
            await lookup.lookup(q, "latency")
            times.append((time.perf_counter() - started) * 1000)
        return times

    try:
        times = asyncio.run(run())
    finally:
        store.close()
    ordered = sorted(times)
    return {
        "queries": len(times),
        "p50": round(statistics.median(times), 1),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    from rag.settings import SearchSettings

    provenance = stamp()
    packs = pack_sizes(SearchSettings().chunk_max_chars)
    with tempfile.TemporaryDirectory(prefix="raydiag-packs-") as tmp:
        work = Path(tmp)
        cache = work / "embedding-cache.sqlite"
        cold = ingest(work, "cold", cache)
        warm = ingest(work, "warm", cache)
        restart = ingest(work, "warm", cache)
        latency = lookup_latency(str(work / "warm.db"))
    entry = {
        **provenance,
        "packs": packs,
        "documents": sum(p["documents"] for p in packs),
        "chunks": sum(p["chunks"] for p in packs),
        "ingest_cold_s": round(cold),
        "ingest_warm_s": round(warm),
        "ingest_restart_s": round(restart),
        "lookup_ms": latency,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(entry, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in entry.items() if k != "packs"}))


if __name__ == "__main__":
    main()
