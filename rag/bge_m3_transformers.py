"""BGE-M3 in plain transformers (4.x or 5.x): one XLM-RoBERTa forward pass gives the dense vector (the
CLS state, L2-normalised) and the sparse lexical weights (ReLU of the model's ``sparse_linear`` head per
token, the largest weight per token id, special tokens dropped), the same arithmetic as FlagEmbedding's
``BGEM3FlagModel`` (tests/rag/test_bge_m3_transformers.py compares the two on one model).

Why: FlagEmbedding imports only with transformers<5 and vLLM pins 5.x, so FlagEmbedding needs an
environment of its own; this runs in the main one, on a GPU machine that has only torch and
transformers, and reads up to the model's own position limit (8,192 tokens for BGE-M3) instead of
FlagEmbedding's 512 default.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import numpy as np

from rag.encoded import Encoded

SPECIAL = ("cls_token", "eos_token", "pad_token", "unk_token")  # FlagEmbedding's unused tokens


def position_limit(config: Any) -> int:
    """Tokens the model can read: XLM-RoBERTa's positions start after the padding index."""
    return int(config.max_position_embeddings) - int(config.pad_token_id or 0) - 1


class TransformersBgeM3Embedder:
    sparse = True

    def __init__(
        self,
        model_path: str,
        device: str | None = None,
        batch_size: int = 32,
        max_length: int = 8192,
        fp16: bool | None = None,
    ) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        # fp16 where it pays (a GPU); on CPU it is slower and less exact.
        self.fp16 = self.device.startswith("cuda") if fp16 is None else fp16
        dtype = torch.float16 if self.fp16 else torch.float32
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModel.from_pretrained(model_path, add_pooling_layer=False).to(self.device, dtype).eval()
        hidden = int(self.model.config.hidden_size)
        self.sparse_linear = torch.nn.Linear(hidden, 1)
        state = torch.load(Path(model_path) / "sparse_linear.pt", map_location="cpu", weights_only=True)
        self.sparse_linear.load_state_dict(state)
        self.sparse_linear.to(self.device, dtype).eval()
        self.dim = hidden
        self.batch_size = batch_size
        self.max_length = min(max_length, position_limit(self.model.config))
        vocab = self.tokenizer.special_tokens_map
        self._unused = {self.tokenizer.convert_tokens_to_ids(vocab[t]) for t in SPECIAL if t in vocab}
        self._lock = threading.Lock()

    def _lexical(self, weights: np.ndarray, ids: list[int]) -> dict[int, float]:
        out: dict[int, float] = {}
        for w, i in zip(weights.tolist(), ids, strict=True):
            if i not in self._unused and w > 0 and w > out.get(i, 0.0):
                out[i] = float(w)
        return out

    def _forward(self, batch: list[dict[str, list[int]]]) -> tuple[np.ndarray, list[dict[int, float]]]:
        import torch

        padded = self.tokenizer.pad(batch, padding=True, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            hidden = self.model(
                input_ids=padded["input_ids"], attention_mask=padded["attention_mask"]
            ).last_hidden_state
            dense = torch.nn.functional.normalize(hidden[:, 0].float(), dim=-1)
            token_weights = torch.relu(self.sparse_linear(hidden)).squeeze(-1).float()
        weights = token_weights.cpu().numpy()
        ids = padded["input_ids"].cpu().tolist()
        return dense.cpu().numpy(), [self._lexical(w, i) for w, i in zip(weights, ids, strict=True)]

    def encode_sync(self, texts: list[str]) -> Encoded:
        if not texts:
            return Encoded(np.zeros((0, self.dim), dtype=np.float32), [])
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_length)
        inputs = [{k: enc[k][i] for k in ("input_ids", "attention_mask")} for i in range(len(texts))]
        # Longest first, so a batch pads to lengths close to its own (FlagEmbedding does the same).
        order = sorted(range(len(texts)), key=lambda i: -len(inputs[i]["input_ids"]))
        dense = np.zeros((len(texts), self.dim), dtype=np.float32)
        lexical: list[dict[int, float]] = [{} for _ in texts]
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                vecs, lex = self._forward([inputs[i] for i in idx])
                for row, i in enumerate(idx):
                    dense[i] = vecs[row]
                    lexical[i] = lex[row]
        return Encoded(dense, lexical)

    def token_count(self, texts: list[str]) -> int:
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_length)
        return sum(len(ids) for ids in enc["input_ids"])

    async def encode(self, texts: list[str]) -> Encoded:
        return await asyncio.to_thread(self.encode_sync, texts)
