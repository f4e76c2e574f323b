"""Evidence guard rules, one by one."""

from __future__ import annotations

import copy
from typing import Any

from harness.contracts import ExecutorEvidence
from harness.stages.evidence_guard import check
from harness.tools.base import LedgerEntry, ToolResult

LEDGER = {
    "call_1": LedgerEntry(
        "call_1",
        "lookup_knowledge",
        {"query": "q"},
        ToolResult("success", {"evidence": [{"key": "doc-a#chunk-0", "text": "Pool   stats: active=20,\nidle=0"}]}),
        5,
    ),
    "call_2": LedgerEntry("call_2", "query_logs", {"service": "s"}, ToolResult("success", {"matches": []}), 5),
}


def _evidence(**binding: Any) -> ExecutorEvidence:
    b = {
        "source_type": "tool_trace",
        "source_id": "doc-a#chunk-0",
        "tool_name": "lookup_knowledge",
        "source_invocation_ids": ["call_1"],
        "evidence_excerpt": "pool stats: active=20, idle=0",
    }
    b.update(binding)
    claim = {
        "claim_id": "c1",
        "claim_type": "symptom",
        "claim_text": "t",
        "support_level": "direct",
        "evidence_bindings": [b],
    }
    return ExecutorEvidence.model_validate({"diagnosis_summary": "s", "claims": [claim], "user_facing_answer": "a"})


def test_a_good_claim_passes_with_normalised_whitespace_and_case() -> None:
    result = check(_evidence(), LEDGER)
    assert result.passed and result.verified_analysis_count == 1 and result.verified_source_count == 1
    assert result.referenced_tool_call_ids == ["call_1"]


def test_each_rule_finds_its_violation() -> None:
    cases = {
        "does not exist in this run": _evidence(source_invocation_ids=["call_9"]),
        "is lookup_knowledge, not query_logs": _evidence(tool_name="query_logs"),
        "is not in the cited output": _evidence(source_id="doc-b#chunk-3"),
        "evidence_excerpt does not occur": _evidence(evidence_excerpt="active=21"),
    }
    for problem, evidence in cases.items():
        result = check(evidence, LEDGER)
        assert not result.passed
        assert any(problem in v["problem"] for v in result.violations), (problem, result.violations)
    assert check(_evidence(source_invocation_ids=["call_9"]), LEDGER).invalid_tool_reference_count == 1


def test_root_cause_needs_direct_support() -> None:
    ev = _evidence()
    claim = ev.claims[0].model_copy(update={"claim_type": "root_cause", "support_level": "indirect"})
    result = check(ev.model_copy(update={"claims": [claim]}), LEDGER)
    assert not result.passed and "direct support" in result.violations[0]["problem"]


def test_drop_keeps_good_claims_and_fail_policy_fails() -> None:
    good = _evidence().claims[0]
    bad = copy.deepcopy(_evidence(source_invocation_ids=["call_9"]).claims[0]).model_copy(update={"claim_id": "c2"})
    ev = _evidence().model_copy(update={"claims": [good, bad]})
    dropped = check(ev, LEDGER, "drop")
    assert dropped.passed and dropped.kept is not None and [c.claim_id for c in dropped.kept.claims] == ["c1"]
    assert not check(ev, LEDGER, "fail").passed


def test_trace_summary_takes_the_topic_from_the_retrieved_domains() -> None:
    # Seed 000 §4.2: topic_domain comes from retrieval_details.retrieved_domains first; the L0 hint
    # ("payment", from a keyword) names what was asked, the blocks what was found.
    from harness.stages.verifier import tool_trace_summary

    details = {"retrieved_domains": ["disk", "kubernetes"], "l0_hints": {"domains": ["payment"]}}
    found = ToolResult("success", {"evidence": []}, retrieval={"retrieval_details": details})
    hinted = ToolResult("no_data", {"evidence": []}, retrieval={"retrieval_details": {"l0_hints": details["l0_hints"]}})
    (item,) = tool_trace_summary({"c1": LedgerEntry("c1", "lookup_knowledge", {"query": "ENOSPC"}, found, 1)})
    assert item.topic_domain == "disk"
    (only_hint,) = tool_trace_summary({"c2": LedgerEntry("c2", "lookup_knowledge", {"query": "x"}, hinted, 1)})
    assert only_hint.topic_domain == "payment"
