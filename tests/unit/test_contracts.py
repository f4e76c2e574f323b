"""The seeds' own JSON examples validate against harness.contracts; malformed variants do not."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from harness import contracts as c


def _json_blocks(path: Path) -> list[Any]:
    blocks = re.findall(r"```json\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)
    return [json.loads(b) for b in blocks]


@pytest.fixture(scope="module")
def seed_blocks(shared_dir: Path) -> dict[str, Any]:
    """The examples of seed 000, keyed by the contract each one shows."""
    out: dict[str, Any] = {}
    for block in _json_blocks(shared_dir / "seeds" / "chat-agent-data-contracts.md"):
        keys = set(block)
        if {"selected_skill", "plan"} <= keys:
            out["planner_plan"] = block
        elif {"question", "available_knowledge_domains"} <= keys:
            out["planner_input"] = block
        elif "answer_version" in keys:
            out["executor_evidence"] = block
        elif "original_query" in keys:
            out["verifier_input"] = block
        elif "trace_ref" in keys:
            out["tool_trace_item"] = block
        elif "groundedness_score" in keys:
            out["verifier_output"] = block
        elif "groundednessScore" in keys:
            out["verifier_decision"] = block
        elif "missing_evidence_facts" in keys:
            out["retry_context"] = block
        elif "verifier_evaluation" in keys:
            out["verifier_evaluation"] = block["verifier_evaluation"]
    return out


CASES: list[tuple[str, type[BaseModel]]] = [
    ("planner_input", c.PlannerInput),
    ("planner_plan", c.PlannerPlan),
    ("executor_evidence", c.ExecutorEvidence),
    ("verifier_input", c.VerifierInput),
    ("tool_trace_item", c.ToolTraceSummaryItem),
    ("verifier_output", c.VerifierOutput),
    ("verifier_decision", c.VerifierDecision),
    ("retry_context", c.RetryContext),
    ("verifier_evaluation", c.VerifierEvaluation),
]


@pytest.mark.parametrize(("key", "model"), CASES)
def test_seed_example_validates(seed_blocks: dict[str, Any], key: str, model: type[BaseModel]) -> None:
    assert key in seed_blocks, f"seed example {key} not found"
    parsed = model.model_validate(seed_blocks[key])
    # Round trip: what we emit validates again and keeps the seed's field names.
    again = model.model_validate(parsed.model_dump())
    assert set(seed_blocks[key]) <= set(again.model_dump())


def _break(data: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    broken = copy.deepcopy(data)
    node = broken
    for p in path[:-1]:
        node = node[p]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return broken


MALFORMED = [
    ("planner_plan", ["plan"], []),
    ("planner_plan", ["selection_reason"], KeyError),
    ("executor_evidence", ["claims", 0, "evidence_bindings"], []),
    ("executor_evidence", ["claims", 0, "support_level"], "strong"),
    ("executor_evidence", ["answer_version"], "executor_evidence_v2"),
    ("executor_evidence", ["user_facing_answer"], KeyError),
    ("verifier_output", ["verdict"], "SUPPORTED"),
    ("verifier_output", ["groundedness_score"], 1.5),
    ("verifier_output", ["facts_checked", 0, "verification"], "maybe"),
    ("verifier_input", ["executor_output_parse_status", "status"], "broken"),
    ("tool_trace_item", ["evidence_level"], "strong"),
    ("tool_trace_item", ["invocation_count"], -1),
    ("retry_context", ["round"], 0),
    ("verifier_evaluation", ["traceability_version"], "v2"),
]


@pytest.mark.parametrize(("key", "path", "value"), MALFORMED)
def test_malformed_variant_is_rejected(seed_blocks: dict[str, Any], key: str, path: list[Any], value: Any) -> None:
    model = dict(CASES)[key]
    with pytest.raises(ValidationError):
        model.model_validate(_break(seed_blocks[key], path, value))


def test_input_params_example_from_e2e_seed(shared_dir: Path) -> None:
    blocks = _json_blocks(shared_dir / "seeds" / "diagnosis-e2e-walkthrough.md")
    example = next(b for b in blocks if "request_bytes" in b)
    assert {"query", "step_id", "tool_call_id", "request_bytes"} <= set(example)


def test_chat_request_rules() -> None:
    assert c.ChatRequest(Id="s-1", Question="为什么 payment-service 超时?").Question
    for bad in [
        {"Id": "s-1", "Question": ""},
        {"Id": "s-1", "Question": "   "},
        {"Id": "s-1"},
        {"Id": "", "Question": "q"},
        {"Id": "bad id with spaces", "Question": "q"},
        {"Id": "s-1", "Question": "x" * (c.MAX_QUESTION_CHARS + 1)},
        {"Id": "s-1", "Question": "q", "extra": 1},
        {"Id": "s-1", "Question": 42},
    ]:
        with pytest.raises(ValidationError):
            c.ChatRequest.model_validate(bad)


def _report() -> c.DiagnosisReportPayload:
    return c.DiagnosisReportPayload(
        report=c.Report(
            conclusion=c.Conclusion(text="pool exhausted", based_on_analysis_ids=["A-001"]),
            analysis=[c.AnalysisItem(id="A-001", text="active connections at max", evidence_keys=["doc#chunk-0"])],
            limitations=c.Limitations(scope="lookup_knowledge only", missing_info=["no live metrics"]),
        ),
        references=[c.Reference(source_type="RAG", source="hikaricp-runbook", scope="HikariCP pool")],
    )


def test_sse_events_and_payload_types() -> None:
    ok = c.ContentEvent(content_type="DIAGNOSIS_REPORT", payload=_report())
    assert c.event_data(ok)["payload"]["report"]["conclusion"]["based_on_analysis_ids"] == ["A-001"]
    with pytest.raises(ValidationError):
        c.ContentEvent(content_type="SAFE_FALLBACK", payload=_report())
    fb = c.SafeFallbackPayload(fallback_type="INSUFFICIENT_EVIDENCE", text="当前无法基于已获取证据生成可靠结论。")
    assert c.ContentEvent(content_type="SAFE_FALLBACK", payload=fb).payload.outcome == "FALLBACK"  # type: ignore[union-attr]
    with pytest.raises(ValidationError):
        c.StatusEvent(code="THINKING")
    with pytest.raises(ValidationError):
        c.DoneEvent(outcome="OK")
    assert c.event_data(c.MetadataEvent(session_id="s", run_id="r")) == {"session_id": "s", "run_id": "r"}


def test_retrieval_details_contract() -> None:
    details = c.RetrievalDetails(
        search_mode="hybrid",
        tool_call_id="call_1",
        status="READY",
        invocation_status="READY",
        evidence_status="EVIDENCE_FOUND",
        retrieval_evidence_status="supported",
        attempts=[
            c.RetrievalAttempt(
                name="FILTERED_VECTOR", usable=False, duration_ms=12, top_similarity=0.2, candidate_count=3
            ),
            c.RetrievalAttempt(
                name="UNFILTERED_VECTOR", usable=True, duration_ms=20, top_similarity=0.81, candidate_count=20
            ),
        ],
        selected_attempt="UNFILTERED_VECTOR",
        l0_hints=c.L0Hints(domains=["database"], matched_keywords=["hikaricp"]),
        sources=["hikaricp-runbook"],
        evidence_keys=["hikaricp-runbook#chunk-0"],
        evidence_candidate_count=20,
        evidence_block_count=5,
        returned_count=5,
        context_used_chars=3022,
        context_char_budget=4000,
        agent_result_bytes=3212,
        completeness_hint="complete",
        truncated=False,
        relevance_level="PRECISE",
    )
    assert details.model_dump()["audit_schema"] == "rag_lookup_v1"
    with pytest.raises(ValidationError):
        c.RetrievalDetails.model_validate({**details.model_dump(), "unknown_field": 1})
