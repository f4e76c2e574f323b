"""Embeddings kept on disk by the text they encode, so an ingest embeds only what it has not seen.

Every ``make run`` ingests the default packs, and every benchmark ingests them into a scratch
collection: embedding some ten thousand chunks on two CPU cores is minutes, and nearly all of them were
embedded before. The cache is keyed by the embedder's name and the chunk's exact text (SHA-256), so a
changed chunk, or another model, is embedded afresh; a cached row is the bytes the embedder returned.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np

from rag.encoded import Embedder, Encoded


def _key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


class CachedEmbedder:
    """``encode_sync`` of an embedder, through the cache at ``path``. ``model`` names the embedder
    (with its settings): vectors of another name are never returned."""

    def __init__(self, embedder: Embedder, model: str, path: Path) -> None:
        self.embedder = embedder
        self.model = model
        self.dim = embedder.dim
        self.sparse = embedder.sparse
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path))
        self.db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dense BLOB, lexical TEXT)")
        self.hits = 0
        self.misses = 0

    def encode_sync(self, texts: list[str]) -> Encoded:
        keys = [_key(self.model, t) for t in texts]
        rows: dict[str, tuple[bytes, str | None]] = {}
        for start in range(0, len(keys), 500):  # SQLite's bound-variable limit
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            sql = f"SELECT key, dense, lexical FROM vectors WHERE key IN ({marks})"  # values bound as parameters
            rows.update({k: (d, lx) for k, d, lx in self.db.execute(sql, part)})
        missing = [i for i, k in enumerate(keys) if k not in rows]
        if missing:
            fresh = self.embedder.encode_sync([texts[i] for i in missing])
            new_rows = []
            for j, i in enumerate(missing):
                weights = json.dumps(fresh.lexical[j]) if fresh.lexical is not None else None
                rows[keys[i]] = (np.asarray(fresh.dense[j], dtype=np.float32).tobytes(), weights)
                new_rows.append((keys[i], *rows[keys[i]]))
            self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", new_rows)
            self.db.commit()
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        dense = np.stack([np.frombuffer(rows[k][0], dtype=np.float32) for k in keys]) if keys else np.zeros((0, 0))
        if not self.sparse:
            return Encoded(dense)
        lexical = [{int(t): float(w) for t, w in json.loads(rows[k][1] or "{}").items()} for k in keys]
        return Encoded(dense, lexical)

    def close(self) -> None:
        self.db.close()
