"""Ingestion: files → chunks → embeddings → the knowledge collection (idempotent per document)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rag.chunking import Chunk, chunk_file
from rag.embedding import Embedder, Encoded
from rag.store import KnowledgeStore

SUFFIXES = {".md", ".markdown", ".txt"}


@dataclass
class IngestReport:
    documents: int = 0
    chunks: int = 0
    skipped: int = 0
    collection_total: int = 0


def find_documents(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for p in sorted(path.rglob("*")):
        if p.is_file() and p.suffix.lower() in SUFFIXES and not p.name.startswith(("_", ".")) and p.name != "README.md":
            yield p


def ingest_paths(
    paths: Iterable[Path],
    store: KnowledgeStore,
    embedder: Embedder,
    domain: str | None = None,
    progress: bool = True,
    batch: int = 64,
    max_chars: int = 700,
) -> IngestReport:
    report = IngestReport()
    files = [f for p in paths for f in find_documents(p)]
    pending: list[tuple[str, list[Chunk], Encoded]] = []
    for n, path in enumerate(files, 1):
        chunks: list[Chunk] = chunk_file(path, domain=domain, max_chars=max_chars)
        if not chunks:
            report.skipped += 1
            continue
        texts = [c.embed_text for c in chunks]
        vectors = Encoded.concat([embedder.encode_sync(texts[i : i + batch]) for i in range(0, len(texts), batch)])
        pending.append((chunks[0].doc_id, chunks, vectors))
        if len(pending) >= 100:  # one delete + one insert per 100 documents: per-document calls were the cost
            store.replace_documents(pending)
            pending = []
        report.documents += 1
        report.chunks += len(chunks)
        if progress:
            width = 30
            done = int(width * n / len(files))
            sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {n}/{len(files)} {path.name[:40]:40}")
            sys.stderr.flush()
    store.replace_documents(pending)
    if progress and files:
        sys.stderr.write("\n")
    store.finish_ingest()
    report.collection_total = store.count()
    return report
