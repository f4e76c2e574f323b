"""A seed-shaped run (e2e walkthrough §6.3) produced through the real RunRecorder."""

from __future__ import annotations

from harness.protocols import AuditSink
from harness.recorder import RunRecorder, Usage
from tests.fakes.sinks import ListSink

SEED_USAGE = {
    "router": Usage(323, 583),
    "agent_r1": Usage(2554, 103),
    "agent_r2": Usage(3580, 1123),
    "guard": Usage(4141, 829),
}


def seed_run(
    run_id: str = "27415045-e674-41af-9cea-de01f27ce040",
    session_id: str = "e2e-rag-success",
    drop_usage_of: str | None = None,
    request: dict | None = None,  # type: ignore[type-arg]
    sink: AuditSink | None = None,
    recorder_cls: type[RunRecorder] = RunRecorder,
) -> ListSink:
    """Emit the run into ``sink`` (a new ``ListSink`` by default) and return the ListSink used."""
    sink = sink if sink is not None else ListSink()
    rec = recorder_cls(sink, session_id, run_id, "MySQL connection pool exhausted HikariCP diagnosis")
    rec.start()

    def usage(name: str) -> Usage | None:
        return None if name == drop_usage_of else SEED_USAGE[name]

    rec.model_usage("ROUTING", "INTENT_ROUTER", 1, usage("router"))
    rec.timeline("ROUTING", "ROUTING_ATTEMPT")
    rec.timeline("ROUTING", "ROUTING_DECISION", "DIAGNOSIS", intent="DIAGNOSIS")
    s0 = rec.begin_step()
    rec.model_usage("AGENT", "DIAGNOSIS_AGENT", 1, usage("agent_r1"))
    rec.agent_step(
        s0,
        message_roles=["system", "user"],
        tool_names=["lookup_knowledge"],
        assistant_text="",
        reasoning_text=None,
        duration_ms=1454,
        usage=usage("agent_r1"),
    )
    rec.tool_invocation(
        tool_call_id="call_00_91fKPqaJg4z4gvvZIqcA8891",
        tool_name="lookup_knowledge",
        request=request or {"query": "MySQL connection pool exhausted HikariCP diagnosis"},
        status="success",
        output_preview="level=PRECISE blocks=5",
        output_length=3212,
        duration_ms=1243,
        retrieval={
            "retrieval_layer": "L1",
            "l0_match_count": 3,
            "l1_match_count": 5,
            "relevance_level": "PRECISE",
            "is_truncated": False,
            "retrieval_details": {"audit_schema": "rag_lookup_v1", "evidence_status": "EVIDENCE_FOUND"},
        },
    )
    s1 = rec.begin_step()
    rec.model_usage("AGENT", "DIAGNOSIS_AGENT", 2, usage("agent_r2"))
    rec.agent_step(
        s1,
        message_roles=["system", "user", "assistant", "tool"],
        tool_names=[],
        assistant_text='{"answer_version": "executor_evidence_v1"}',
        reasoning_text="the pool is at its maximum",
        duration_ms=8196,
        usage=usage("agent_r2"),
    )
    rec.timeline("EVIDENCE", "EVIDENCE_GUARD_INITIAL", "PASSED", violation_count=0)
    rec.model_usage("SEMANTIC", "SEMANTIC_GUARD", 1, usage("guard"))
    rec.timeline("SEMANTIC", "SEMANTIC_GUARD_ATTEMPT")
    rec.timeline("SEMANTIC", "SEMANTIC_GUARD_DECISION", "PASS", verdict="PASS")
    rec.timeline("RELEASE", "RELEASE_DECISION", "SUCCESS")
    rec.finish(
        "SUCCEEDED",
        intent="DIAGNOSIS",
        release_outcome="SUCCESS",
        content_type="DIAGNOSIS_REPORT",
        answer="pool exhausted",
        conclusion="pool exhausted",
        self_evaluation={"verifier_evaluation": {"verdict": "PASS", "round": 1}},
    )
    return sink  # type: ignore[return-value]
