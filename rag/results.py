"""What a knowledge lookup returns: the seed's ``rag_lookup_v1`` audit record (e2e walkthrough §3.3)
and the outcome the agent's tool turns into a tool result. Defined here, in rag/, which imports nothing
from the agent (harness/) or the service (deployments/): the harness imports these types from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


RelevanceLevel = Literal["PRECISE", "REFERENCE", "RELATED", ""]
# The configured search with the L0 domain filter, then without it; when neither is usable, the dense
# list alone and then the keyword list alone (seed e2e §3.3 names the first two).
AttemptName = Literal["FILTERED_VECTOR", "NAMED_SYSTEM", "UNFILTERED_VECTOR", "DENSE_ONLY", "BM25_ONLY"]
ScoreLabel = Literal["hybrid", "dense", "bm25"]


class RetrievalAttempt(_Strict):
    """One search of a lookup. ``top_similarity`` is the best dense cosine similarity of the attempt's
    hits to the query, for every attempt (a BM25-only hit's is computed from its stored vector).
    ``usable``: a hit at or above the quality gate's lowest level (RELATED), except for BM25_ONLY, which
    runs only when no dense similarity passed: usable when its best hit stands out of its own list (a
    z-score of at least the configured keyword standout) and most of the query can match that hit's
    writing system (rag/script.py), i.e. an exact keyword match the embedder missed."""

    name: AttemptName
    usable: bool
    duration_ms: int = Field(ge=0)
    top_similarity: float | None
    candidate_count: int = Field(ge=0)


class BlockScore(_Strict):
    """Seed e2e §3.5: a block's ``score`` is the search's own (``scoreLabel`` says which: fused for
    hybrid, so not a cosine), its ``qualityScore`` the dense similarity the quality gate reads."""

    key: str
    doc_id: str
    domain: str
    score: float
    scoreLabel: ScoreLabel  # the seed's camel-case field names
    qualityScore: float
    relevance_level: RelevanceLevel
    chars: int = Field(ge=0)


class L0Hints(_Strict):
    domains: list[str] = Field(default_factory=list)
    matched_keywords: list[str] = Field(default_factory=list)


class RetrievalDetails(_Strict):
    """Seed e2e §3.3: ``tool_invocation.retrieval_details`` with ``audit_schema = rag_lookup_v1``."""

    audit_schema: Literal["rag_lookup_v1"] = "rag_lookup_v1"
    search_mode: Literal["hybrid", "dense", "bm25"]
    tool_call_id: str
    status: str
    invocation_status: str
    evidence_status: Literal["EVIDENCE_FOUND", "NO_EVIDENCE", "ERROR"]
    retrieval_evidence_status: str
    attempts: list[RetrievalAttempt]
    selected_attempt: AttemptName | None
    l0_hints: L0Hints
    query_gloss: str = ""  # the English gloss searched beside a Chinese query (rag/gloss.py); "" for none
    sources: list[str]
    retrieved_domains: list[str] = Field(default_factory=list)  # of the returned blocks, best block first
    evidence_keys: list[str]
    blocks: list[BlockScore] = Field(default_factory=list)
    evidence_candidate_count: int = Field(ge=0)
    evidence_block_count: int = Field(ge=0)
    returned_count: int = Field(ge=0)
    context_used_chars: int = Field(ge=0)
    context_char_budget: int = Field(gt=0)
    agent_result_bytes: int = Field(ge=0)
    completeness_hint: str
    truncated: bool  # the character budget cut a block or left one out
    relative_cutoff: float = Field(default=0.0, ge=0, le=1)
    below_cutoff_count: int = Field(default=0, ge=0)  # candidates under relative_cutoff x the top score
    block_cap_dropped_count: int = Field(default=0, ge=0)  # usable candidates past the block cap
    relevance_level: RelevanceLevel = ""
    error_message: str | None = None


@dataclass
class LookupOutcome:
    evidence_status: str  # EVIDENCE_FOUND | NO_EVIDENCE | ERROR
    agent_view: dict[str, Any]  # RagToolResult: evidence blocks keyed docId#chunk-n
    retrieval_details: dict[str, Any]  # rag_lookup_v1
    relevance_level: str = ""
    retrieval_layer: str | None = None
    l0_match_count: int = 0
    l1_match_count: int = 0
    truncated: bool = False
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
