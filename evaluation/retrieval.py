"""Retrieval evaluation on BEIR-layout datasets (corpus.jsonl, queries.jsonl, qrels/<split>.tsv).

The corpus goes through the service's own chunking, embedder and Milvus store (a scratch
collection), every query runs dense-only, BM25-only and hybrid, and chunk hits are scored at document
level (a document's score is its best chunk's: MaxP). Metrics: nDCG@10, recall@10, recall@100.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.chunking import Chunk, chunk_document
from rag.encoded import Embedder, Encoded
from rag.gloss import gloss, with_gloss
from rag.store import FusionSettings, KnowledgeStore, SearchMode

MODES: tuple[SearchMode, ...] = ("dense", "bm25", "hybrid")
CANDIDATES = 100  # chunks fetched per query and mode: enough for recall@100 at document level


@dataclass
class BeirDataset:
    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]  # only the queries that have judgements in the split
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> relevance grade


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from e


def load_beir(directory: Path, split: str = "test") -> BeirDataset:
    for name in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (directory / name).is_file():
            raise FileNotFoundError(f"{directory}: missing {name} (BEIR layout expected)")
    corpus = {
        str(d["_id"]): (str(d.get("title") or ""), str(d.get("text") or "")) for d in _jsonl(directory / "corpus.jsonl")
    }
    qrels: dict[str, dict[str, int]] = {}
    with (directory / "qrels" / f"{split}.tsv").open(encoding="utf-8") as f:
        for row in csv.reader(f, delimiter="\t"):
            if len(row) < 3 or row[0] == "query-id":
                continue
            grade = int(row[2])
            if grade > 0:
                qrels.setdefault(row[0], {})[row[1]] = grade
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(directory / "queries.jsonl") if str(q["_id"]) in qrels}
    qrels = {q: r for q, r in qrels.items() if q in queries}
    if not queries:
        raise ValueError(f"{directory}: no query of queries.jsonl is judged in qrels/{split}.tsv")
    return BeirDataset(corpus, queries, qrels)


def ndcg_at(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rel: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(rel)) / len(rel) if rel else 0.0


def doc_ranking(chunk_doc_ids: list[str]) -> list[str]:
    """Chunks come best first; a document ranks at its best chunk (MaxP)."""
    return list(dict.fromkeys(chunk_doc_ids))


def score(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    n = len(qrels)
    return {
        "ndcg@10": round(sum(ndcg_at(rankings.get(q, []), r) for q, r in qrels.items()) / n, 4),
        "recall@10": round(sum(recall_at(rankings.get(q, []), r, 10) for q, r in qrels.items()) / n, 4),
        "recall@100": round(sum(recall_at(rankings.get(q, []), r, 100) for q, r in qrels.items()) / n, 4),
    }


def _progress(label: str, n: int, total: int) -> None:
    width = 30
    done = int(width * n / max(total, 1))
    sys.stderr.write(f"\r{label:8} [{'#' * done}{'.' * (width - done)}] {n}/{total}")
    if n >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


async def _encode(embedder: Embedder, texts: list[str], batch: int = 64) -> Encoded:
    return Encoded.concat([await embedder.encode(texts[i : i + batch]) for i in range(0, len(texts), batch)])


async def index_corpus(
    data: BeirDataset,
    store: KnowledgeStore,
    embedder: Embedder,
    progress: bool = True,
    batch: int = 64,
    max_chars: int = 700,
) -> tuple[int, dict[str, str]]:
    """Chunk + embed + insert the corpus; returns (chunks, internal doc id -> dataset doc id).

    Dataset ids (``DEV_0``, ``4983``) need not match our document-id rule, so documents are stored
    under ``d<n>`` and mapped back when scoring.
    """
    id_map: dict[str, str] = {}
    chunks: list[Chunk] = []
    for n, (doc_id, (title, text)) in enumerate(data.corpus.items()):
        internal = f"d{n}"
        id_map[internal] = doc_id
        body = text if text.strip() else title
        chunks += chunk_document(
            internal, body, domain="eval", source=doc_id, title=title or doc_id, max_chars=max_chars
        )
    done = 0
    for start in range(0, len(chunks), batch * 8):
        part = chunks[start : start + batch * 8]
        texts = [c.embed_text for c in part]
        store.insert_chunks(part, await _encode(embedder, texts, batch))
        done += len(part)
        if progress:
            _progress("index", done, len(chunks))
    store.finish_ingest()
    return len(chunks), id_map


async def run_queries(
    data: BeirDataset,
    store: KnowledgeStore,
    embedder: Embedder,
    id_map: dict[str, str],
    fusions: dict[str, FusionSettings],
    progress: bool = True,
) -> dict[str, dict[str, list[str]]]:
    """Every query through dense, BM25 and one hybrid per named fusion (the index is built once, so the
    variants compare side by side); returns list name -> query id -> ranked dataset doc ids."""
    qids = list(data.queries)
    out: dict[str, dict[str, list[str]]] = {m: {} for m in ("dense", "bm25", *fusions)}
    enc = await _encode(embedder, [data.queries[q] for q in qids])
    # A Chinese query is also searched with its English gloss appended (rag/gloss.py), as the lookup does.
    glossed = {q: with_gloss(data.queries[q], g) for q in qids if (g := gloss(data.queries[q]))}
    genc = await _encode(embedder, list(glossed.values()))
    gvecs = {q: genc.dense[i] for i, q in enumerate(glossed)}
    runs: list[tuple[str, SearchMode, FusionSettings | None]] = [("dense", "dense", None), ("bm25", "bm25", None)]
    runs += [(name, "hybrid", f) for name, f in fusions.items()]
    for n, qid in enumerate(qids, 1):
        qlex = enc.lexical[n - 1] if enc.lexical is not None else None
        for name, mode, fusion in runs:
            ranked = store.rank(
                data.queries[qid], enc.dense[n - 1], mode, CANDIDATES, fusion=fusion, qlex=qlex, gvec=gvecs.get(qid)
            )
            out[name][qid] = [id_map[d] for d in doc_ranking([r.doc_id for r in ranked])]
        if progress and (n % 50 == 0 or n == len(qids)):
            _progress("query", n, len(qids))
    return out


async def evaluate_dataset(
    data: BeirDataset,
    embedder: Embedder,
    milvus_uri: str,
    fusion: FusionSettings | None = None,
    variants: dict[str, FusionSettings] | None = None,
    progress: bool = True,
    max_chars: int = 700,
    subsets: dict[str, set[str]] | None = None,
) -> dict[str, Any]:
    """Index once, then score dense, BM25, ``hybrid`` (``fusion``) and each named variant; with
    ``subsets`` (name -> query ids) every subset is scored on its own as well."""
    fusions = {"hybrid": fusion or FusionSettings(), **(variants or {})}
    store = KnowledgeStore(milvus_uri, f"raydiag_eval_{int(time.time() * 1000)}", embedder.dim, embedder.sparse)
    try:
        t0 = time.perf_counter()
        n_chunks, id_map = await index_corpus(data, store, embedder, progress, max_chars=max_chars)
        t1 = time.perf_counter()
        rankings = await run_queries(data, store, embedder, id_map, fusions, progress)
        t2 = time.perf_counter()
    finally:
        store.drop()
        store.close()

    def scored(qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
        res: dict[str, Any] = {"queries": len(qrels)}
        for name in ("dense", "bm25", "hybrid"):
            res[name] = score(rankings[name], qrels)
        if variants:
            res["variants"] = {name: score(rankings[name], qrels) for name in variants}
        return res

    result: dict[str, Any] = {"corpus": len(data.corpus), **scored(data.qrels), "chunks": n_chunks}
    for name, ids in (subsets or {}).items():
        result[name] = scored({q: r for q, r in data.qrels.items() if q in ids})
    result["index_s"] = round(t1 - t0, 1)
    result["query_ms"] = round((t2 - t1) * 1000 / max(len(data.queries) * (2 + len(fusions)), 1), 2)
    return result


async def evaluate(
    directory: Path,
    embedder: Embedder,
    milvus_uri: str,
    split: str = "test",
    fusion: FusionSettings | None = None,
    progress: bool = True,
    max_chars: int = 700,
    variants: dict[str, FusionSettings] | None = None,
) -> dict[str, Any]:
    """``evaluate_dataset`` on a BEIR-layout directory's ``split``."""
    result = await evaluate_dataset(
        load_beir(directory, split), embedder, milvus_uri, fusion, variants, progress, max_chars
    )
    result["split"] = split
    return result


def format_table(name: str, result: dict[str, Any]) -> str:
    lines = [f"{name}: {result['corpus']} documents, {result['queries']} queries, {result['chunks']} chunks"]
    lines.append(f"{'mode':8} {'nDCG@10':>8} {'R@10':>8} {'R@100':>8}")
    for mode in MODES:
        m = result[mode]
        lines.append(f"{mode:8} {m['ndcg@10']:8.4f} {m['recall@10']:8.4f} {m['recall@100']:8.4f}")
    return "\n".join(lines)
