"""A full run's rows and events, step binding, redaction, idempotency and token reconciliation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import delete, func, select, update

from audit.db import make_engine
from audit.migrate import upgrade
from audit.models import AgentReasoningAudit, AgentStep, DiagnosisTraceEvent, ToolInvocation
from audit.store import AuditStore
from audit.trace_reader import TraceNotFound, TraceReader
from tests.audit.run_script import seed_run


@pytest.fixture
def store_and_reader(db_url: str) -> Any:
    upgrade(db_url)
    engine = make_engine(db_url)
    yield AuditStore(engine), TraceReader(engine)
    engine.dispose()


def test_full_run_rows_and_timeline(store_and_reader: Any) -> None:
    store, reader = store_and_reader
    sink = seed_run()
    store.write_batch(sink.records)
    trace = reader.trace("e2e-rag-success", "27415045-e674-41af-9cea-de01f27ce040")

    run = trace["run"]
    assert run["status"] == "SUCCEEDED" and run["release_outcome"] == "SUCCESS"
    assert run["total_token_count"] == 13236 and run["input_token_count"] == 10598
    assert run["model_call_count"] == 4 and run["step_count"] == 2 and run["tool_call_count"] == 1
    assert run["self_evaluation"]["verifier_evaluation"]["verdict"] == "PASS"
    assert [e["event_type"] for e in trace["timeline"]] == [
        "RUN_STARTED",
        "MODEL_TOKEN_USAGE",
        "ROUTING_ATTEMPT",
        "ROUTING_DECISION",
        "MODEL_TOKEN_USAGE",
        "AGENT_MODEL_STEP",
        "TOOL_INVOCATION",
        "MODEL_TOKEN_USAGE",
        "AGENT_MODEL_STEP",
        "EVIDENCE_GUARD_INITIAL",
        "MODEL_TOKEN_USAGE",
        "SEMANTIC_GUARD_ATTEMPT",
        "SEMANTIC_GUARD_DECISION",
        "RELEASE_DECISION",
        "RUN_FINISHED",
    ]
    assert [e["sequence_no"] for e in trace["timeline"]] == list(range(1, 16))
    summary = trace["summary"]
    expected = {"timeline_events": 15, "agent_steps": 2, "tool_invocations": 1, "reasoning": 1}
    assert summary["stored"] == expected and summary["emitted"] == expected
    assert summary["complete"] is True and summary["missing"] == {}
    assert summary["tokens_reconciled"] is True and summary["audited_total_tokens"] == 13236
    finished = trace["timeline"][-1]["details"]
    assert finished["run_total_tokens"] == 13236 and "tokens_reconciled" not in finished
    # agent_step.token_count covers the agent's own steps only (seed: 2657 + 4703).
    assert sum(s["token_count"] for s in trace["steps"]) == 7360


def test_step_metadata_is_bounded_and_reasoning_separate(store_and_reader: Any) -> None:
    store, reader = store_and_reader
    store.write_batch(seed_run().records)
    trace = reader.trace("e2e-rag-success")
    s0, s1 = trace["steps"]
    assert s0["model_output"] == {
        "has_text": False,
        "tool_names": ["lookup_knowledge"],
        "reasoning_available": False,
        "reasoning_bytes": 0,
        "assistant_bytes": 0,
        "content_source": "assistant",
    }
    assert s0["model_input"] == {"message_count": 2, "roles": ["system", "user"]}
    assert s1["model_output"]["reasoning_available"] is True and s1["thought"] == "the pool is at its maximum"
    assert "executor_evidence_v1" not in json.dumps(s1["model_output"])
    reasoning = reader.reasoning("e2e-rag-success")["steps"]
    assert [r["step_index"] for r in reasoning] == [1]  # step 0 produced neither text
    assert reasoning[0]["reasoning_text"] == "the pool is at its maximum"
    assert "executor_evidence_v1" in reasoning[0]["assistant_text"]


def test_tool_step_id_is_the_issuing_agent_step(store_and_reader: Any) -> None:
    store, reader = store_and_reader
    store.write_batch(seed_run().records)
    trace = reader.trace("e2e-rag-success")
    tool = trace["toolInvocations"][0]
    step0 = trace["steps"][0]
    assert tool["step_id"] == step0["id"]
    assert tool["input_params"] == {
        "query": "MySQL connection pool exhausted HikariCP diagnosis",
        "tool_call_id": "call_00_91fKPqaJg4z4gvvZIqcA8891",
        "request_bytes": 62,
        "step_id": step0["id"],
    }
    assert tool["relevance_level"] == "PRECISE" and tool["retrieval_details"]["audit_schema"] == "rag_lookup_v1"


def test_redaction_reaches_the_database(store_and_reader: Any) -> None:
    store, reader = store_and_reader
    secret_request = {
        "query": "x" * 500,
        "Authorization": "Bearer abcdefgh12345678",
        "api_key": "sk-zzzzzzzzzzzzzzzzzzzzzz",
        "db_password": "hunter2",
    }
    store.write_batch(seed_run(request=secret_request).records)
    tool = reader.trace("e2e-rag-success")["toolInvocations"][0]
    params = tool["input_params"]
    assert params["query"] == "x" * 160 and params["query_truncated"] is True and params["query_chars"] == 500
    dumped = json.dumps(tool)
    for secret in ("Authorization", "api_key", "db_password", "abcdefgh12345678", "hunter2", "sk-zzz"):
        assert secret not in dumped


def test_replayed_batch_creates_no_duplicates(store_and_reader: Any) -> None:
    store, _reader = store_and_reader
    records = seed_run().records
    store.write_batch(records)
    store.write_batch(records)  # e.g. the acknowledgement was lost and the writer retried
    store.write_batch(records[3:9])
    with store.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(DiagnosisTraceEvent)) == 15
        assert conn.scalar(select(func.count()).select_from(AgentStep)) == 2
        assert conn.scalar(select(func.count()).select_from(ToolInvocation)) == 1


def test_reconciliation_fails_when_a_call_reports_no_usage(store_and_reader: Any) -> None:
    store, reader = store_and_reader
    store.write_batch(seed_run(drop_usage_of="agent_r2").records)
    trace = reader.trace("e2e-rag-success")
    assert trace["run"]["usage_unavailable_count"] == 1 and "tokens_reconciled" not in trace["run"]
    assert trace["summary"]["tokens_reconciled"] is False
    usage = [e for e in trace["timeline"] if e["event_type"] == "MODEL_TOKEN_USAGE"]
    assert [u["details"]["usage_available"] for u in usage] == [True, True, False, True]


def test_reconciliation_fails_when_a_usage_event_is_lost(store_and_reader: Any) -> None:
    store, reader = store_and_reader
    records = [
        r for r in seed_run().records if not (r.kind == "trace_event" and r.data["sequence_no"] == 8)
    ]  # the agent's round-2 MODEL_TOKEN_USAGE never reached the database
    store.write_batch(records)
    summary = reader.trace("e2e-rag-success")["summary"]
    assert summary["tokens_reconciled"] is False and summary["timeline_contiguous"] is False
    assert summary["complete"] is False and summary["missing"] == {"timeline_events": 1}


@pytest.mark.parametrize(
    ("table", "kind"),
    [(ToolInvocation, "tool_invocations"), (AgentStep, "agent_steps"), (AgentReasoningAudit, "reasoning")],
)
def test_a_lost_row_makes_the_trace_incomplete(store_and_reader: Any, table: Any, kind: str) -> None:
    """A row that never reached the database (deleted here) is seen against RUN_FINISHED's counts."""
    store, reader = store_and_reader
    store.write_batch(seed_run().records)
    assert reader.trace("e2e-rag-success")["summary"]["complete"] is True
    with store.engine.begin() as conn:
        victim = conn.scalar(select(func.max(table.id)))
        if table is AgentStep:  # the tool row references its step; keep the tool, lose the step
            conn.execute(update(ToolInvocation).values(step_id=None))
        conn.execute(delete(table).where(table.id == victim))
    summary = reader.trace("e2e-rag-success")["summary"]
    assert summary["complete"] is False
    assert summary["missing"] == {kind: 1}
    assert summary["timeline_contiguous"] is True  # the timeline alone would not have noticed


def test_a_lost_timeline_event_makes_the_trace_incomplete(store_and_reader: Any) -> None:
    store, reader = store_and_reader
    store.write_batch(seed_run().records)
    with store.engine.begin() as conn:
        conn.execute(delete(DiagnosisTraceEvent).where(DiagnosisTraceEvent.sequence_no == 7))  # TOOL_INVOCATION
    summary = reader.trace("e2e-rag-success")["summary"]
    assert summary["complete"] is False and summary["missing"] == {"timeline_events": 1}


def test_a_run_without_run_finished_is_not_complete(store_and_reader: Any) -> None:
    store, reader = store_and_reader
    store.write_batch([r for r in seed_run().records if r.kind != "run_finished"])
    summary = reader.trace("e2e-rag-success")["summary"]
    assert summary["finished"] is True  # the RUN_FINISHED event arrived, the run row's update did not
    assert summary["complete"] is False and summary["tokens_reconciled"] is False


def test_trace_reads_by_exact_run_and_session(store_and_reader: Any) -> None:
    store, reader = store_and_reader
    store.write_batch(seed_run(run_id="run-a", session_id="sess-1").records)
    store.write_batch(seed_run(run_id="run-b", session_id="sess-1").records)
    store.write_batch(seed_run(run_id="run-c", session_id="sess-2").records)
    assert reader.trace("sess-1", "run-a")["run"]["run_id"] == "run-a"
    assert len(reader.trace("sess-1", "run-a")["timeline"]) == 15
    assert {r["run_id"] for r in reader.runs("sess-1")} == {"run-a", "run-b"}
    with pytest.raises(TraceNotFound):
        reader.trace("sess-1", "run-c")  # a run of another session
    with pytest.raises(TraceNotFound):
        reader.trace("sess-9")
