"""Pipeline behaviour beyond the recorded cases: history, budgets, model failures."""

from __future__ import annotations

from harness.contracts import ChatRequest, ContentEvent, FailureEvent
from harness.history import SessionHistory
from harness.model import ModelRequest, ModelResponse, ToolCall
from harness.pipeline import DiagnosisPipeline
from harness.recorder import Usage
from harness.settings import HarnessSettings
from tests.fakes.scripted_model import ScriptedModel, planning_then_unparsable
from tests.fakes.sinks import ListSink

CHAT = {"intent": "CHITCHAT", "reason": "greeting", "answer": "Hello from raydiag."}
# The model-driven flow (the model routes, plans, picks tools and writes the contract itself).
MODEL_DRIVEN = {"routing": "model", "planning": "model", "playbook": False, "grounding": "model"}


async def _run(pipeline: DiagnosisPipeline, question: str, session: str = "s", tenant: str | None = None) -> list:  # type: ignore[type-arg]
    return [e async for e in pipeline.run(ChatRequest(Id=session, Question=question), tenant)]


async def test_follow_up_questions_see_the_session_history() -> None:
    model = ScriptedModel({"router": [CHAT, CHAT, CHAT]})
    history = SessionHistory()
    pipeline = DiagnosisPipeline(ListSink(), model=model, history=history)
    await _run(pipeline, "first question")
    await _run(pipeline, "second question")
    await _run(pipeline, "other session", session="t")
    # The router sees only the question; history goes to the planner and executor, so check the store.
    assert history.get_now(("", "s")) == [
        ("first question", "Hello from raydiag."),
        ("second question", "Hello from raydiag."),
    ]
    assert history.get_now(("", "t")) == [("other session", "Hello from raydiag.")]


async def test_two_tenants_with_one_session_id_never_see_each_other() -> None:
    """Session ids come from clients: tenant B sending tenant A's id must not get A's turns."""
    seen: list[ModelRequest] = []

    fn = planning_then_unparsable(seen)

    history = SessionHistory()
    pipeline = DiagnosisPipeline(
        ListSink(), model=ScriptedModel(fn=fn), settings=HarnessSettings(**MODEL_DRIVEN), history=history
    )
    secret = "tenant A's database password rotation broke payments"
    await _run(pipeline, secret, session="shared", tenant="tenant-a")
    seen.clear()
    await _run(pipeline, "what happened before?", session="shared", tenant="tenant-b")
    prompts = [m.content for r in seen for m in r.messages]
    assert prompts and not any(secret in p for p in prompts)
    assert history.get_now(("tenant-b", "shared")) and history.get_now(("tenant-a", "shared"))
    # and tenant A's own follow-up does see its turn
    seen.clear()
    await _run(pipeline, "and now?", session="shared", tenant="tenant-a")
    assert any(secret in m.content for r in seen if r.stage == "planner" for m in r.messages)


async def test_history_reaches_the_planner_within_its_budget() -> None:
    seen: list[ModelRequest] = []

    fn = planning_then_unparsable(seen)

    history = SessionHistory()
    pipeline = DiagnosisPipeline(
        ListSink(), model=ScriptedModel(fn=fn), settings=HarnessSettings(history_token_budget=50), history=history
    )
    history.add_now(("", "s"), "old " * 500, "long answer")  # over the budget: left out
    history.add_now(("", "s"), "what broke yesterday?", "the cache")
    await _run(pipeline, "and today?")
    planner = next(r for r in seen if r.stage == "planner")
    contents = [m.content for m in planner.messages]
    assert "what broke yesterday?" in contents and "the cache" in contents
    assert not any(c.startswith("old old") for c in contents)


async def test_the_tool_loop_is_bounded() -> None:
    calls = 0

    def fn(req: ModelRequest) -> ModelResponse:
        nonlocal calls
        if req.stage == "router":
            return ModelResponse('{"intent": "DIAGNOSIS", "reason": "r", "answer": ""}', usage=Usage(1, 1))
        if req.stage == "planner":
            return ModelResponse('{"selection_reason": "x", "plan": ["p"], "reasoning": "r"}', usage=Usage(1, 1))
        calls += 1
        if req.tools:  # a model that never stops calling tools while it may
            return ModelResponse("", tool_calls=[ToolCall("", "current_time", {})], usage=Usage(1, 1))
        return ModelResponse("still no JSON", usage=Usage(1, 1))

    from harness.tools.current_time import CurrentTimeTool

    settings = HarnessSettings(max_tool_steps=3, **MODEL_DRIVEN)
    pipeline = DiagnosisPipeline(
        ListSink(), model=ScriptedModel(fn=fn), settings=settings, tools=lambda _scope: [CurrentTimeTool()]
    )
    events = await _run(pipeline, "loop forever")
    assert calls == 3
    content = next(e for e in events if isinstance(e, ContentEvent))
    assert content.content_type == "SAFE_FALLBACK" and events[-1].outcome == "FALLBACK"


async def test_a_model_failure_ends_with_failure_and_done() -> None:
    model = ScriptedModel({"router": [{"error": "UNAVAILABLE", "message": "engine not started"}]})
    sink = ListSink()
    events = await _run(DiagnosisPipeline(sink, model=model), "q")
    assert [e.event for e in events] == ["metadata", "status", "failure", "done"]
    failure = next(e for e in events if isinstance(e, FailureEvent))
    assert failure.error_code == "MODEL_UNAVAILABLE" and events[-1].outcome == "FAILED"
    finished = [r for r in sink.records if r.kind == "run_finished"]
    assert finished[0].data["status"] == "FAILED" and finished[0].data["error_code"] == "MODEL_UNAVAILABLE"


async def test_missing_usage_is_not_reconciled() -> None:
    model = ScriptedModel({"router": [CHAT]}, usage=False)
    sink = ListSink()
    await _run(DiagnosisPipeline(sink, HarnessSettings(**MODEL_DRIVEN), model=model), "hi")
    finished = next(r for r in sink.records if r.kind == "run_finished")
    assert finished.data["usage_unavailable_count"] == 1 and finished.data["total_token_count"] == 0


async def test_repeated_tool_calls_run_once_then_the_model_must_answer() -> None:
    from harness.tools.base import ToolResult

    runs = 0

    class Counting:
        name = "current_time"
        description = "clock"
        parameters: dict = {"type": "object"}  # type: ignore[type-arg]

        async def run(self, args: dict, call_id: str = "") -> ToolResult:  # type: ignore[type-arg]
            nonlocal runs
            runs += 1
            return ToolResult("success", {"utc_now": "2026-12-02T00:00:00+00:00"})

    executor_rounds: list[bool] = []

    def fn(req: ModelRequest) -> ModelResponse:
        if req.stage == "router":
            return ModelResponse('{"intent": "DIAGNOSIS", "reason": "r", "answer": ""}', usage=Usage(1, 1))
        if req.stage == "planner":
            return ModelResponse('{"selection_reason": "x", "plan": ["p"], "reasoning": "r"}', usage=Usage(1, 1))
        executor_rounds.append(bool(req.tools))
        if req.tools:
            return ModelResponse("", tool_calls=[ToolCall("", "current_time", {})], usage=Usage(1, 1))
        return ModelResponse("no JSON", usage=Usage(1, 1))

    pipeline = DiagnosisPipeline(
        ListSink(), HarnessSettings(**MODEL_DRIVEN), model=ScriptedModel(fn=fn), tools=lambda _scope: [Counting()]
    )
    await _run(pipeline, "what time is it broken")
    assert runs == 1
    # round 1 runs the tool, round 2 repeats it (skipped), round 3 must answer without tools
    assert executor_rounds[:3] == [True, True, False]


async def test_a_tool_call_whose_query_is_an_object_does_not_fail_the_run() -> None:
    """A small model in the constructed flow's tool round once called lookup_knowledge with an object as
    its query, on a question about a component with no telemetry: filtering the playbook's category
    lookups hashed that object and the run ended FAILED (INTERNAL). The one outcome now: an answer."""
    from harness.rules_model import RulesModel
    from harness.wiring import build_pipeline
    from telemetry.settings import TelemetrySettings
    from tests.harness.test_rules_model import OneRunbook

    class ObjectQuery(RulesModel):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            props = (request.json_schema or {}).get("properties", {})
            if request.stage == "executor" and request.tools and "done" in props:
                return ModelResponse(
                    "", tool_calls=[ToolCall("c1", "lookup_knowledge", {"query": {"text": "etcd"}})], usage=Usage(1, 1)
                )
            return await super().complete(request)

    demo = TelemetrySettings(clock="2026-11-30T10:15:00Z")
    pipeline = build_pipeline(ListSink(), HarnessSettings(max_tool_steps=2), demo, ObjectQuery(), OneRunbook(True))
    events = await _run(pipeline, "etcd members report slow fsync and leader elections; root cause?")
    assert not any(isinstance(e, FailureEvent) for e in events)
    content = next(e for e in events if isinstance(e, ContentEvent))
    assert (content.content_type, events[-1].outcome) == ("DIAGNOSIS_REPORT", "SUCCESS")
