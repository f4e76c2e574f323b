"""Ingestion: files → chunks → embeddings → the knowledge collection (idempotent per document)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from rag.chunking import Chunk, chunk_file, doc_id_for
from rag.encoded import Embedder, Encoded
from rag.packs import Pack
from rag.store import KnowledgeStore

SUFFIXES = {".md", ".markdown", ".txt"}


@dataclass
class IngestReport:
    documents: int = 0
    chunks: int = 0
    skipped: int = 0
    renamed: int = 0  # documents whose file name another document of the same ingest already had
    collection_total: int = 0


def find_documents(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for p in sorted(path.rglob("*")):
        if p.is_file() and p.suffix.lower() in SUFFIXES and not p.name.startswith(("_", ".")) and p.name != "README.md":
            yield p


def _own_id(chunks: list[Chunk], path: Path, owners: dict[str, Path]) -> list[Chunk]:
    """A document id no other file of this ingest has: two corpora document the same alert under the
    same file name (KubePodCrashLooping.md in English and in Chinese), and the second would silently
    replace the first. The later one is named by its folder too (``kubernetes-kubepodcrashlooping``)."""
    doc_id = chunks[0].doc_id
    if owners.setdefault(doc_id, path) == path:
        return chunks
    for parent in (path.parent, *path.parent.parents):
        candidate = f"{doc_id_for(Path(parent.name or 'doc'))}-{doc_id}"
        if owners.setdefault(candidate, path) == path:
            return [replace(c, doc_id=candidate) for c in chunks]
    return chunks


@dataclass(frozen=True)
class Document:
    """A file to ingest: its domain (None: front matter or folder), its text as read through its markup
    (None: the file as it is) and the address it is cited by (None: front matter ``url`` or its path)."""

    path: Path
    domain: str | None = None
    text: str | None = None
    source: str | None = None


def ingest_paths(
    paths: Iterable[Path],
    store: KnowledgeStore,
    embedder: Embedder,
    domain: str | None = None,
    progress: bool = True,
    batch: int = 64,
    max_chars: int = 700,
) -> IngestReport:
    documents = [Document(f, domain) for p in paths for f in find_documents(p)]
    return ingest_documents(documents, store, embedder, progress, batch, max_chars)


def pack_documents(packs: Iterable[Pack]) -> list[Document]:
    """Each pack's documents, filed under its domain (the system they are about), read through its markup."""
    return [Document(path, pack.domain, pack.text(path), pack.url(path)) for pack in packs for path in pack.documents()]


def ingest_documents(
    documents: list[Document],
    store: KnowledgeStore,
    embedder: Embedder,
    progress: bool = True,
    batch: int = 64,
    max_chars: int = 700,
) -> IngestReport:
    report = IngestReport()
    pending: list[tuple[str, list[Chunk], Encoded]] = []
    owners: dict[str, Path] = {}
    for n, doc in enumerate(documents, 1):
        path = doc.path
        chunks: list[Chunk] = chunk_file(path, doc.domain, max_chars, doc.text, doc.source)
        if not chunks:
            report.skipped += 1
            continue
        chunks = _own_id(chunks, path, owners)
        if chunks[0].doc_id != doc_id_for(path):
            report.renamed += 1
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
            done = int(width * n / len(documents))
            sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {n}/{len(documents)} {path.name[:40]:40}")
            sys.stderr.flush()
    store.replace_documents(pending)
    if progress and documents:
        sys.stderr.write("\n")
    store.finish_ingest()
    report.collection_total = store.count()
    return report
