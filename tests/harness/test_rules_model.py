"""The scripted profile's model: a full diagnosis that passes the guards on real tool output."""

from __future__ import annotations

from typing import Any

from harness.contracts import ChatRequest, event_data
from harness.rules_model import RulesModel, _quote
from harness.tools.lookup_knowledge import LookupOutcome
from harness.wiring import build_pipeline
from tests.fakes.sinks import ListSink


class OneRunbook:
    """A knowledge lookup neighbour returning one evidence block (or none)."""

    def __init__(self, found: bool) -> None:
        self.found = found

    async def lookup(self, query: str, tool_call_id: str, domain: str | None = None) -> LookupOutcome:
        blocks = (
            [
                {
                    "key": "hikaricp#chunk-0",
                    "title": "HikariCP pool exhaustion",
                    "heading": "Symptoms",
                    "domain": "database",
                    # As the store returns it: the heading path first, then the section's text.
                    "text": "HikariCP pool exhaustion > Symptoms\n"
                    'Requests fail with "Connection is not available, request timed out after 30000ms".\n'
                    "Check maximumPoolSize and leaked connections.",
                }
            ]
            if self.found
            else []
        )
        view = {"relevance_level": "PRECISE" if blocks else "none", "completeness_hint": "complete", "evidence": blocks}
        return LookupOutcome(
            evidence_status="EVIDENCE_FOUND" if blocks else "NO_EVIDENCE",
            agent_view=view,
            retrieval_details={"audit_schema": "rag_lookup_v1"},
            relevance_level="PRECISE" if blocks else "",
            retrieval_layer="L1" if blocks else None,
            l0_match_count=0,
            l1_match_count=len(blocks),
            truncated=False,
            error=None,
        )


async def _run(found: bool) -> tuple[list[dict[str, Any]], ListSink]:
    from deployments.config import parse_config

    cfg = parse_config({}, "test", env={})
    sink = ListSink()
    pipeline = build_pipeline(sink, cfg.harness, cfg.telemetry, model=RulesModel(), lookup=OneRunbook(found))
    events = [e async for e in pipeline.run(ChatRequest(Id="s1", Question="HikariCP pool exhausted?"), None)]
    return [{"event": e.event, **event_data(e)} for e in events], sink


def test_quote_survives_json_escaping() -> None:
    assert (
        _quote('say "hi"\\ and then a long enough line of plain text here')
        == "and then a long enough line of plain text here"
    )


async def test_evidence_gives_a_report_that_cites_the_real_call() -> None:
    events, sink = await _run(found=True)
    content = next(e for e in events if e["event"] == "content")
    assert content["content_type"] == "DIAGNOSIS_REPORT", content
    refs = content["payload"]["references"]
    lookups = {
        r.data["tool_call_id"]
        for r in sink.records
        if r.kind == "tool_invocation" and r.data["tool_name"] == "lookup_knowledge"
    }
    assert refs and refs[0]["tool_call_id"] in lookups
    assert "Connection is not available" in refs[0]["excerpt"]
    assert events[-1] == {"event": "done", "outcome": "SUCCESS"}
    finished = [r for r in sink.records if r.kind == "trace_event" and r.data.get("event_type") == "RUN_FINISHED"]
    # RUN_FINISHED's counts are what the sink actually received, kind by kind.
    received = {
        "timeline_events": sum(r.kind == "trace_event" for r in sink.records),
        "agent_steps": sum(r.kind == "agent_step" for r in sink.records),
        "tool_invocations": sum(r.kind == "tool_invocation" for r in sink.records),
        "reasoning": sum(r.kind == "reasoning" for r in sink.records),
    }
    assert finished and finished[0].data["details"]["emitted"] == received
    assert received["tool_invocations"] >= 1 and received["agent_steps"] >= 1


async def test_no_evidence_gives_a_safe_fallback() -> None:
    events, _ = await _run(found=False)
    content = next(e for e in events if e["event"] == "content")
    assert content["content_type"] == "SAFE_FALLBACK"
    assert events[-1]["event"] == "done"
