"""BGE-M3 through FlagEmbedding: dense vectors plus sparse lexical weights in one encoder pass.

FlagEmbedding 1.4.2 imports only with ``transformers<5`` while vLLM pins 5.x, so this module runs in
its own interpreter: the embedder deployment gets a Ray ``runtime_env`` whose ``py_executable`` is the
BGE-M3 environment (``make install-bge``). Nothing else imports it.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np

from rag.encoded import Encoded


def lexical_to_plain(raw: dict[str, object]) -> dict[int, float]:
    """FlagEmbedding returns token-id strings with numpy floats; Milvus wants int keys, float values."""
    return {int(k): float(v) for k, v in raw.items() if float(v) > 0}  # type: ignore[arg-type]


class BgeM3Embedder:
    sparse = True

    def __init__(self, model_path: str, device: str | None = None, batch_size: int = 32, max_length: int = 512) -> None:
        import torch
        from FlagEmbedding import BGEM3FlagModel

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        # fp16 only where it pays (GPU); on CPU it is slower and less exact.
        self._model = BGEM3FlagModel(model_path, use_fp16=self.device.startswith("cuda"), devices=self.device)
        self.dim = int(self._model.model.model.config.hidden_size)
        self._batch_size = batch_size
        self._max_length = max_length
        self._lock = threading.Lock()

    def encode_sync(self, texts: list[str]) -> Encoded:
        if not texts:
            return Encoded(np.zeros((0, self.dim), dtype=np.float32), [])
        with self._lock:
            out = self._model.encode(
                texts,
                batch_size=self._batch_size,
                max_length=self._max_length,
                return_dense=True,
                return_sparse=True,
                return_colbert_vecs=False,
            )
        dense = np.asarray(out["dense_vecs"], dtype=np.float32).reshape(len(texts), self.dim)
        dense /= np.maximum(np.linalg.norm(dense, axis=1, keepdims=True), 1e-12)
        return Encoded(dense, [lexical_to_plain(w) for w in out["lexical_weights"]])

    def token_count(self, texts: list[str]) -> int:
        enc = self._model.tokenizer(texts, truncation=True, max_length=self._max_length)
        return sum(len(ids) for ids in enc["input_ids"])

    async def encode(self, texts: list[str]) -> Encoded:
        return await asyncio.to_thread(self.encode_sync, texts)
