"""lookup_knowledge: the harness side of hybrid retrieval (seed e2e §3).

The retrieval itself (embedding, Milvus hybrid search, post-processing) lives in ``rag/`` behind the
``KnowledgeLookup`` protocol; this tool only turns its outcome into a tool result: the projected
``RagToolResult`` for the agent, the full ``retrieval_details`` for the audit trail.
"""

from __future__ import annotations

from typing import Any, Protocol

from harness.tools.base import ToolResult
from rag.results import LookupOutcome as LookupOutcome  # defined by the retrieval it describes


class KnowledgeLookup(Protocol):
    async def lookup(self, query: str, tool_call_id: str, domain: str | None = None) -> LookupOutcome: ...


class LookupKnowledgeTool:
    name = "lookup_knowledge"
    description = (
        "Search the runbook knowledge base (hybrid dense + keyword). Returns evidence blocks, each with a "
        "stable key 'docId#chunk-n', the document title and text, and a relevance level."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look up, in the question's language"},
            "domain": {"type": "string", "description": "optional knowledge domain from the domain map"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(self, lookup: KnowledgeLookup) -> None:
        self._lookup = lookup

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        query = str(args.get("query", "")).strip()
        domain = args.get("domain") or None
        outcome = await self._lookup.lookup(query, call_id, domain if isinstance(domain, str) else None)
        status = {"EVIDENCE_FOUND": "success", "NO_EVIDENCE": "no_data"}.get(outcome.evidence_status, "error")
        audit = {
            "retrieval_details": outcome.retrieval_details,
            "relevance_level": outcome.relevance_level or None,
            "retrieval_layer": outcome.retrieval_layer,
            "l0_match_count": outcome.l0_match_count,
            "l1_match_count": outcome.l1_match_count,
            "is_truncated": outcome.truncated,
        }
        blocks = outcome.agent_view.get("evidence", [])
        preview = f"level={outcome.relevance_level or 'none'} blocks={len(blocks)} status={outcome.evidence_status}"
        return ToolResult(status, outcome.agent_view, preview=preview, error=outcome.error, retrieval=audit)  # type: ignore[arg-type]
