"""What an embedder returns, and the protocol every embedder implements: the one module of ``rag/``
every other one may import (it imports none of them), so the embedders, the store and the lookup
never circle back on each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


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
