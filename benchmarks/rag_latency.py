"""Retrieval latency: ``lookup_knowledge`` end to end (embed + Milvus Lite hybrid search + post-process) at
20,000 chunks, and embedder throughput batched vs one text at a time: through the Ray embedder
deployment (what a lookup sees) and for the model alone.

The index holds real text chunked as the service chunks (``search.chunk_max_chars``, 1,500): the
bundled runbooks, SciFact abstracts and CMRC2018 passages, the public runbook and postmortem corpora in
../shared/data (evaluation use only; the KubeSphere set is held out for retrieval evaluation and
left out), then Loghub's log lines as the remainder. Queries are SciFact's and CMRC2018's real ones.

The one-at-a-time baseline of the embedder deployment runs on a deployment whose batcher does not wait
(``embed_batch_wait_s: 0``): with the default 10 ms wait every lone call would pay it, which is the
batcher's cost, not what batching saves. The default deployment's lone-call rate is reported beside it.

With ``--baseline REF`` the same chunks and vectors are also indexed by the store code of git revision
REF (the schema, analysers included, is part of what a lookup costs) and searched by its lookup code, in
rounds that alternate with this code's (each round a fresh process on its version's Milvus Lite file),
so the two p50s compare side by side in one run.

    python benchmarks/rag_latency.py [--chunks 20000] [--queries 200] [--baseline REF]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.provenance import stamp  # noqa: E402
from rag.chunking import Chunk, chunk_document, chunk_file  # noqa: E402
from rag.embedding import Usem3Embedder  # noqa: E402
from rag.ingest import find_documents  # noqa: E402
from rag.settings import SearchSettings  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


MARKDOWN_CORPORA = (
    "gitlab-com-runbooks",
    "openshift-runbooks",
    "pingcap-docs-cn-troubleshooting",
    "prometheus-operator-runbooks",
    "kubernetes-mixin-runbook",
    "icco-postmortems",
)


LOGS = ("loghub-2k/*/*_2k.log", "nezha-rca-onlineboutique/rca_data/*/log/*.csv")


def doc_id(path: str) -> str:
    """A store-valid document id from a path (lower-case letters, digits, '-', '_'); file names repeat
    across corpora (README.md, …), so the whole path counts."""
    return re.sub(r"[^a-z0-9\u4e00-\u9fff_]+", "-", path.lower()).strip("-")


def _log_documents() -> list[tuple[str, str]]:
    paths = [p for pattern in LOGS for p in sorted(DATA.glob(pattern))]
    return [(doc_id(f"log-{p.relative_to(DATA)}"), p.read_text(encoding="utf-8", errors="replace")) for p in paths]


def corpus_chunks(limit: int, max_chars: int) -> list[Chunk]:
    def files(root: Path) -> list[Chunk]:
        # doc ids by path inside the corpus: file names repeat across corpora (README.md, …)
        return [
            dataclasses.replace(c, doc_id=doc_id(f"{root.name}/{p.relative_to(root)}"))
            for p in find_documents(root)
            for c in chunk_file(p, max_chars=max_chars)
        ]

    chunks = files(ROOT / "knowledge" / "runbooks")
    for name, domain in (("beir-scifact", "science"), ("cmrc2018-zh-retrieval", "encyclopedia")):
        with (DATA / name / "corpus.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                text = f"# {d.get('title') or d['_id']}\n\n{d['text']}"
                chunks += chunk_document(
                    f"{name}-{d['_id'].lower()}", text, domain=domain, source=name, max_chars=max_chars
                )
    for name in MARKDOWN_CORPORA:
        chunks += files(DATA / name)
    for name, text in _log_documents():
        if len(chunks) >= limit:
            break
        chunks += chunk_document(name, text, domain="logs", source="logs", max_chars=max_chars)
    return chunks[:limit]


def queries(n: int) -> list[str]:
    out: list[str] = []
    for name in ("beir-scifact", "cmrc2018-zh-retrieval"):
        with (DATA / name / "queries.jsonl").open(encoding="utf-8") as fh:
            out += [json.loads(line)["text"] for line in fh][: n // 2]
    return out


def embed_throughput(embedder: Usem3Embedder, texts: list[str], batch: int) -> tuple[float, float]:
    """Texts per second one at a time vs in batches of the deployment's max batch size."""
    start = time.perf_counter()
    for t in texts:
        embedder.embed_sync([t])
    unbatched = len(texts) / (time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed_sync(texts[i : i + batch])
    batched = len(texts) / (time.perf_counter() - start)
    return unbatched, batched


def deployment_throughput(texts: list[str]) -> dict[str, float]:
    """Through the Ray embedder deployment: one request at a time on a deployment whose batcher does
    not wait, vs 64 concurrent callers that the default deployment's @serve.batch groups (and, for
    reference, one at a time on the default deployment)."""
    import ray
    from ray import serve

    from deployments.app import embedder_app
    from deployments.config import parse_config
    from deployments.runtime import start_ray

    with tempfile.TemporaryDirectory(prefix="rl-ray-") as tmp:
        cfg = parse_config({"ray": {"num_cpus": 2, "auth_mode": "disabled", "temp_dir": f"{tmp}/ray"}}, "bench", env={})
        start_ray(cfg)
        try:

            async def sequential(handle: Any) -> float:
                start = time.perf_counter()
                for t in texts:
                    await handle.encode.remote([t])
                return len(texts) / (time.perf_counter() - start)

            async def concurrent(handle: Any, width: int = 64) -> float:
                start = time.perf_counter()
                for i in range(0, len(texts), width):
                    await asyncio.gather(*(handle.encode.remote([t]) for t in texts[i : i + width]))
                return len(texts) / (time.perf_counter() - start)

            async def measure_default(handle: Any) -> dict[str, float]:
                await concurrent(handle)  # warm-up
                seq = await sequential(handle)
                before = await handle.stats.remote()
                conc = await concurrent(handle)
                after = await handle.stats.remote()
                batches = max(after["batches"] - before["batches"], 1)
                return {"waiting_seq": seq, "conc": conc, "mean_batch": len(texts) / batches}

            async def measure_nowait(handle: Any) -> float:
                await concurrent(handle)  # warm-up
                return await sequential(handle)

            nowait = cfg.search.model_copy(update={"embed_batch_wait_s": 0.0})
            handle = serve.run(embedder_app(nowait), name="embed-nowait", route_prefix=None)
            seq = asyncio.run(measure_nowait(handle))
            serve.delete("embed-nowait")
            handle = serve.run(embedder_app(cfg.search), name="embed-bench", route_prefix=None)
            out = asyncio.run(measure_default(handle))
        finally:
            serve.shutdown()
            ray.shutdown()
    return {"seq": seq, **out}


# Indexes the chunks and vectors (two files) with the store code on PYTHONPATH, as ingestion does:
# documents replaced 500 at a time, then flushed and loaded.
BUILDER = """
import json, sys, time
import numpy as np
from rag.chunking import Chunk
from rag.embedding import Encoded
from rag.store import KnowledgeStore

db, collection, chunk_file, vector_file = sys.argv[1:5]
chunks = [Chunk(**c) for c in json.load(open(chunk_file, encoding="utf-8"))]
vectors = np.load(vector_file)
store = KnowledgeStore(db, collection, vectors.shape[1])
start = time.perf_counter()
by_doc = {}
for i, c in enumerate(chunks):
    by_doc.setdefault(c.doc_id, []).append(i)
batch = []
for ids in by_doc.values():
    batch.append((chunks[ids[0]].doc_id, [chunks[i] for i in ids], Encoded(vectors[ids])))
    if len(batch) == 500:
        store.replace_documents(batch)
        batch = []
store.replace_documents(batch)
store.finish_ingest()
print("INSERT_S " + json.dumps(time.perf_counter() - start))
print("COUNT " + json.dumps(store.count()))
store.close()
"""


# Runs in a fresh process with PYTHONPATH at one code version; it uses only the lookup API that the
# compared versions share (KnowledgeStore, KnowledgeLookupService, SearchSettings().fusion).
TIMER = """
import asyncio, json, sys, time
from rag.embedding import Usem3Embedder
from rag.lookup import KnowledgeLookupService
from rag.settings import SearchSettings
from rag.store import KnowledgeStore

db, collection, qfile = sys.argv[1:4]
qs = json.load(open(qfile, encoding="utf-8"))
emb = Usem3Embedder()
fusion = SearchSettings().fusion
store = KnowledgeStore(db, collection, emb.dim)

async def embed(t):
    return emb.encode_sync(t)

async def search(q, v, lex, mode, k, d, *gloss):  # a version with the gloss list passes its vector
    return store.search(q, v, mode, k, d, fusion, lex, *gloss)

async def run(batch):
    svc = KnowledgeLookupService(embed, search)
    out = []
    for i, q in enumerate(batch):
        start = time.perf_counter()
        res = await svc.lookup(q, f"call_{i}")
        ms = (time.perf_counter() - start) * 1000
        out.append((ms, len((getattr(res, "retrieval_details", None) or {}).get("attempts") or [])))
    return out

asyncio.run(run(qs[:10]))  # warm-up
timed = asyncio.run(run(qs))
store.close()
print("TIMES " + json.dumps([t for t, _ in timed]))
print("ATTEMPTS " + json.dumps([a for _, a in timed]))
"""


def run_at(code: Path, script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` in a fresh process with the code at ``code`` on its path; its ``NAME json`` lines."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=code,
        env={**os.environ, "PYTHONPATH": str(code)},
        capture_output=True,
        text=True,
        check=True,
    )
    return {
        name: json.loads(value)
        for name, _, value in (x.partition(" ") for x in done.stdout.splitlines())
        if name.isupper() and value
    }


def timed_lookups(code: Path, db: str, collection: str, qfile: Path) -> list[tuple[float, int]]:
    """(latency ms, searches run) per lookup of the code at ``code`` on the index at ``db``, in a process
    of its own. A lookup runs one search per attempt until one is usable."""
    out = run_at(code, TIMER, db, collection, str(qfile))
    return [(float(t), int(a)) for t, a in zip(out["TIMES"], out["ATTEMPTS"], strict=True)]


def attempt_figures(timed: list[tuple[float, int]]) -> dict[str, float]:
    """How many searches a lookup ran, and the latency of the lookups that needed only one: the
    per-search cost, apart from how often the attempts fall back."""
    single = [t for t, a in timed if a == 1]
    return {
        "attempts_per_lookup": round(statistics.fmean(a for _, a in timed), 3),
        "multi_attempt_share": round(sum(a > 1 for _, a in timed) / len(timed), 3),
        "single_attempt_p50_ms": p50_p95(single)[0] if single else 0.0,
    }


def p50_p95(times: list[float]) -> tuple[float, float]:
    t = sorted(times)
    return round(statistics.median(t), 1), round(t[int(len(t) * 0.95) - 1], 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rag_latency.json"))
    parser.add_argument("--baseline", default=None, help="a git revision whose lookup code runs beside this one")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per code version")
    args = parser.parse_args()

    embedder = Usem3Embedder()
    settings = SearchSettings()
    chunks = corpus_chunks(args.chunks, settings.chunk_max_chars)
    texts = [c.embed_text for c in chunks]
    qs = queries(args.queries)
    # The embedder deployment's batched traffic is lookup queries from concurrent runs (ingestion
    # batches on its own), so throughput is measured on real queries at the deployment's batch size.
    max_batch = settings.embed_max_batch_size
    # First through Ray (before this process opens Milvus Lite: a Ray start in a process that ran
    # Milvus Lite sometimes timed out), then the model alone in this process.
    dep = deployment_throughput(qs)
    embed_throughput(embedder, qs[:32], max_batch)  # warm-up
    unbatched, batched = embed_throughput(embedder, qs, max_batch)

    with tempfile.TemporaryDirectory(prefix="rl-") as tmp:
        start = time.perf_counter()
        vectors = np.concatenate([embedder.embed_sync(texts[i : i + 64]) for i in range(0, len(texts), 64)])
        embed_s = time.perf_counter() - start
        chunks_path, vectors_path = Path(tmp) / "chunks.json", Path(tmp) / "vectors.npy"
        chunks_path.write_text(json.dumps([dataclasses.asdict(c) for c in chunks], ensure_ascii=False), "utf-8")
        np.save(vectors_path, vectors)
        qfile = Path(tmp) / "queries.json"
        qfile.write_text(json.dumps(qs, ensure_ascii=False), encoding="utf-8")
        versions = {"current": ROOT}
        if args.baseline:
            base_dir = Path(tmp) / "baseline"
            subprocess.run(["git", "worktree", "add", "--detach", str(base_dir), args.baseline], cwd=ROOT, check=True)
            versions["baseline"] = base_dir
        runs: dict[str, list[tuple[float, int]]] = {name: [] for name in versions}
        try:
            # Each version indexes the same chunks and vectors with its own store code, then searches
            # its own index.
            built = {
                name: run_at(code, BUILDER, str(Path(tmp) / f"{name}.db"), "bench", str(chunks_path), str(vectors_path))
                for name, code in versions.items()
            }
            insert_s, indexed = built["current"]["INSERT_S"], built["current"]["COUNT"]
            for _ in range(args.rounds):
                for name, code in versions.items():
                    runs[name] += timed_lookups(code, str(Path(tmp) / f"{name}.db"), "bench", qfile)
        finally:
            if args.baseline:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(versions["baseline"])], cwd=ROOT, check=False
                )
    p50, p95 = p50_p95([t for t, _ in runs["current"]])
    compared = {}
    if args.baseline:
        base_commit = subprocess.run(
            ["git", "rev-parse", "--short=12", args.baseline], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        b50, b95 = p50_p95([t for t, _ in runs["baseline"]])
        compared = {
            "baseline": {
                "revision": args.baseline,
                "commit": base_commit,
                "lookup_p50_ms": b50,
                "lookup_p95_ms": b95,
                **attempt_figures(runs["baseline"]),
            },
            "p50_over_baseline": round(p50 / b50, 3),
        }

    result = {
        "chunks": indexed,
        "queries": len(qs),
        "rounds": args.rounds,
        "lookup_p50_ms": p50,
        "lookup_p95_ms": p95,
        **attempt_figures(runs["current"]),
        **compared,
        "chunk_max_chars": settings.chunk_max_chars,
        "chunk_chars_mean": round(statistics.fmean(len(c.text) for c in chunks), 1),
        # The embedder deployment: one lookup at a time (batcher without a wait) vs 64 concurrent
        # lookups batched by @serve.batch (default wait); the default deployment's lone-call rate too.
        "unbatched_per_s": round(dep["seq"], 1),
        "batched_per_s": round(dep["conc"], 1),
        "batched_over_unbatched": round(dep["conc"] / dep["seq"], 2),
        "unbatched_with_default_wait_per_s": round(dep["waiting_seq"], 1),
        "embed_batch_wait_s": settings.embed_batch_wait_s,
        "deployment_mean_batch": round(dep["mean_batch"], 1),
        # The model alone in this process: batches of the deployment's size vs one text per call.
        "model_unbatched_per_s": round(unbatched, 1),
        "model_batched_per_s": round(batched, 1),
        "model_batched_over_unbatched": round(batched / unbatched, 2),
        "embed_batch_size": max_batch,
        "embed_texts": "real SciFact + CMRC2018 queries",
        "index_embed_s": round(embed_s, 1),
        "index_insert_s": round(insert_s, 1),
        **stamp(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
