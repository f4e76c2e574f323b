"""Retrieval settings: where Milvus lives and how lookups are budgeted."""

from pydantic import BaseModel, ConfigDict, Field


class SearchSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    milvus_uri: str = Field(
        default="var/milvus.db",
        description="A file path for embedded Milvus Lite, or http://host:19530 for a Milvus server. "
        "Overridden by RAYDIAG_MILVUS_URI.",
    )
    collection: str = Field(default="raydiag_knowledge", description="Milvus collection name.")
    context_char_budget: int = Field(default=4000, gt=0, description="Evidence characters given to the agent.")
