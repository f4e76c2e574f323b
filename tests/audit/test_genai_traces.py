"""A run exported as an OpenTelemetry GenAI trace by the official OTLP/HTTP exporter, received by a plain
HTTP server in the test that decodes the protobuf: span names, attributes and parent links are checked
against the audit records the same run produced (the pipeline is real, its model scripted)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from audit.genai_traces import GenAiTraceSink
from harness.contracts import ChatRequest
from harness.rules_model import RulesModel
from harness.settings import HarnessSettings
from harness.wiring import build_pipeline, bundled_telemetry
from rag.results import L0Hints, LookupOutcome, RetrievalAttempt, RetrievalDetails
from tests.conftest import REPO
from tests.fakes.sinks import ListSink
from tests.harness.test_rules_model import OneRunbook

SECRET = "hunter2-s3cr3t-value"


class RunbookWithDetails(OneRunbook):
    """The lookup neighbour, with the rag_lookup_v1 details a real lookup records."""

    async def lookup(self, query: str, tool_call_id: str, domain: str | None = None) -> LookupOutcome:
        out = await super().lookup(query, tool_call_id, domain)
        out.retrieval_details = RetrievalDetails(
            search_mode="hybrid",
            tool_call_id=tool_call_id,
            status="READY",
            invocation_status="READY",
            evidence_status="EVIDENCE_FOUND",
            retrieval_evidence_status="supported",
            attempts=[
                RetrievalAttempt(
                    name="UNFILTERED_VECTOR", usable=True, duration_ms=12, top_similarity=0.71, candidate_count=20
                )
            ],
            selected_attempt="UNFILTERED_VECTOR",
            l0_hints=L0Hints(domains=["database"], matched_keywords=["hikari"]),
            sources=["hikaricp"],
            evidence_keys=["hikaricp#chunk-0"],
            evidence_candidate_count=20,
            evidence_block_count=1,
            returned_count=1,
            context_used_chars=180,
            context_char_budget=4000,
            agent_result_bytes=400,
            completeness_hint="complete",
            truncated=False,
            relevance_level="PRECISE",
        ).model_dump()
        return out


class Collector:
    """An OTLP/HTTP traces endpoint: keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.paths: list[str] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the stdlib calls it by this name
                body = self.rfile.read(int(self.headers["content-length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                collector.paths.append(self.path)
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        collector.spans.extend(ss.spans)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.server.shutdown()
    c.server.server_close()


def attrs(span: Any) -> dict[str, Any]:
    out = {}
    for kv in span.attributes:
        v = kv.value
        out[kv.key] = v.string_value or v.int_value or v.double_value or v.bool_value
    return out


async def run_traced(collector: Collector, capture_content: bool) -> tuple[ListSink, list[Any]]:
    records = ListSink()
    sink = GenAiTraceSink(
        records,
        OTLPSpanExporter(endpoint=collector.url),
        model="qwen2.5-coder-0.5b-instruct",
        provider="vllm",
        capture_content=capture_content,
    )
    pipeline = build_pipeline(
        sink, HarnessSettings(), bundled_telemetry(REPO), RulesModel(), lookup=RunbookWithDetails(True)
    )
    question = f"HikariCP connection pool exhausted, requests time out (db password={SECRET})"
    events = [e async for e in pipeline.run(ChatRequest(Id="otel-sess", Question=question), "team-a")]
    assert events[-1].event == "done"
    assert sink.force_flush()
    sink.shutdown()
    return records, collector.spans


async def test_a_run_is_one_trace_built_from_its_audit_records(collector: Collector) -> None:
    records, spans = await run_traced(collector, capture_content=False)
    assert collector.paths and set(collector.paths) == {"/v1/traces"}
    by_name: dict[str, list[Any]] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    (root,) = by_name["invoke_agent raydiag"]
    assert root.parent_span_id == b"" and len({s.trace_id for s in spans}) == 1
    finished = next(r for r in records.records if r.kind == "run_finished")
    ra = attrs(root)
    assert ra["gen_ai.operation.name"] == "invoke_agent" and ra["gen_ai.conversation.id"] == "otel-sess"
    assert ra["raydiag.run_id"] == finished.run_id and ra["raydiag.status"] == finished.data["status"]
    assert ra["gen_ai.usage.input_tokens"] == finished.data["input_token_count"]

    # One chat span per model call the audit trail recorded, with the same tokens, under the root.
    usage = [
        r.data["details"]
        for r in records.records
        if r.kind == "trace_event" and r.data["event_type"] == "MODEL_TOKEN_USAGE"
    ]
    chats = by_name["chat qwen2.5-coder-0.5b-instruct"]
    assert len(chats) == len(usage) >= 2
    assert [(attrs(c)["gen_ai.usage.input_tokens"], attrs(c)["raydiag.component"]) for c in chats] == [
        (u["input_tokens"], u["component"]) for u in usage
    ]
    for c in chats:
        a = attrs(c)
        assert c.parent_span_id == root.span_id
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "vllm"
        assert a["gen_ai.request.model"] == "qwen2.5-coder-0.5b-instruct"
        assert root.start_time_unix_nano <= c.start_time_unix_nano <= c.end_time_unix_nano <= root.end_time_unix_nano

    # One execute_tool span per tool invocation, by call id; the lookup has its retrieval child.
    calls = {r.data["tool_call_id"]: r.data for r in records.records if r.kind == "tool_invocation"}
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    assert {attrs(t)["gen_ai.tool.call.id"] for t in tools} == set(calls)
    for t in tools:
        call = calls[attrs(t)["gen_ai.tool.call.id"]]
        assert t.name == f"execute_tool {call['tool_name']}" and t.parent_span_id == root.span_id
    lookup = next(t for t in tools if attrs(t)["gen_ai.tool.name"] == "lookup_knowledge")
    (retrieval,) = by_name["retrieval knowledge"]
    assert retrieval.parent_span_id == lookup.span_id
    assert attrs(retrieval)["raydiag.evidence_status"] == "EVIDENCE_FOUND"
    assert attrs(retrieval)["raydiag.top_similarity"] == pytest.approx(0.71)

    # No content without the opt-in; the question's secret nowhere.
    everything = repr([attrs(s) for s in spans])
    assert "gen_ai.input.messages" not in everything and "HikariCP connection pool exhausted" not in everything
    assert SECRET not in everything


async def test_contents_only_when_opted_in_and_redacted_even_then(collector: Collector) -> None:
    _, spans = await run_traced(collector, capture_content=True)
    root = next(s for s in spans if s.name == "invoke_agent raydiag")
    question = attrs(root)["gen_ai.input.messages"]
    assert "HikariCP connection pool exhausted" in question
    assert SECRET not in repr([attrs(s) for s in spans])


async def test_a_broken_exporter_costs_the_audit_trail_nothing() -> None:
    records = ListSink()
    sink = GenAiTraceSink(
        records, OTLPSpanExporter(endpoint="http://127.0.0.1:9/v1/traces", timeout=1), model="m", provider="p"
    )
    sink._export = lambda recs: (_ for _ in ()).throw(RuntimeError("span building failed"))  # type: ignore[method-assign]
    pipeline = build_pipeline(
        sink, HarnessSettings(), bundled_telemetry(REPO), RulesModel(), lookup=RunbookWithDetails(True)
    )
    events = [e async for e in pipeline.run(ChatRequest(Id="s", Question="HikariCP pool exhausted"), None)]
    assert events[-1].event == "done"
    assert any(r.kind == "run_finished" for r in records.records) and sink.exported_runs == 0
    sink.shutdown()


def test_the_setting_names_a_collector_and_the_ingress_traces_through_it() -> None:
    from deployments.config import parse_config
    from deployments.ingress import traced_sink

    cfg = parse_config({"llm": {"backend": "vllm"}}, "t", env={"RAYDIAG_OTLP_ENDPOINT": "http://127.0.0.1:4318/"})
    assert cfg.tracing.traces_url() == "http://127.0.0.1:4318/v1/traces"
    inner = ListSink()
    traced = traced_sink(cfg, inner)  # type: ignore[arg-type]
    assert isinstance(traced, GenAiTraceSink) and traced.inner is inner and traced.provider == "vllm"
    traced.shutdown()
    assert traced_sink(parse_config({}, "t", env={}), inner) is inner  # type: ignore[arg-type]
