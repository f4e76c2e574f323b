"""Every stream ends with exactly one `done`, whatever fails, and the run's recorded status matches
what the client saw: model error and timeout, tool timeout, retrieval outage, audit outage, an
exception inside a stage, and a client that goes away (ABORTED)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from deployments.config import parse_config
from harness.contracts import ChatRequest, SseEvent
from harness.model import ModelError, ModelRequest, ModelResponse
from harness.pipeline import DiagnosisPipeline
from harness.rules_model import RulesModel
from harness.tools.lookup_knowledge import LookupOutcome
from harness.wiring import build_pipeline
from tests.fakes.sinks import ListSink
from tests.harness.test_rules_model import OneRunbook

CLIENT_OUTCOME = {"SUCCESS": "SUCCEEDED", "FALLBACK": "FALLBACK", "FAILED": "FAILED"}


class FailingModel(RulesModel):
    """The rules model, failing at one stage in one way."""

    def __init__(self, stage: str, how: str) -> None:
        self.stage, self.how = stage, how

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.stage == self.stage:
            if self.how == "error":
                raise ModelError("UNAVAILABLE", "the engine went away")
            if self.how == "timeout":  # as the LLM deployment answers a generation past request.timeout_s
                await asyncio.sleep(request.timeout_s)
                raise ModelError("TIMEOUT", f"generation took longer than {request.timeout_s:.0f}s")
            if self.how == "crash":
                raise RuntimeError("a bug inside the stage")
        return await super().complete(request)


class Causes(OneRunbook):
    """The one runbook block, from its causes section."""

    async def lookup(self, query: str, tool_call_id: str, domain: str | None = None) -> LookupOutcome:
        outcome = await super().lookup(query, tool_call_id, domain)
        block = outcome.agent_view["evidence"][0]
        block.update(
            heading="Causes",
            text="HikariCP pool exhaustion > Causes\nCommon causes: a slow query holding its connections, "
            "or leaked connections.",
        )
        return outcome


class SlowLookup(OneRunbook):
    async def lookup(self, query: str, tool_call_id: str, domain: str | None = None) -> LookupOutcome:
        await asyncio.sleep(5)  # past the tool timeout
        return await super().lookup(query, tool_call_id, domain)


class DownLookup:
    """What the lookup service returns when Milvus or the embedder is down: an error value."""

    async def lookup(self, query: str, tool_call_id: str, domain: str | None = None) -> LookupOutcome:
        from rag.lookup import KnowledgeLookupService

        async def embed(texts: list[str]) -> Any:
            raise ConnectionError("embedder unreachable")

        async def search(*_: Any) -> Any:
            raise ConnectionError("milvus unreachable")

        return await KnowledgeLookupService(embed, search).lookup(query, tool_call_id, domain)


class BrokenSink(ListSink):
    """The audit hand-off raising on every emit (an outage below it must not break the stream)."""

    def emit(self, record: Any) -> None:
        raise ConnectionError("audit writer unreachable")


def pipeline(model: Any, lookup: Any, sink: Any = None) -> DiagnosisPipeline:
    cfg = parse_config({"harness": {"stage_timeout_s": 0.5}}, "test", env={})
    return build_pipeline(sink or ListSink(), cfg.harness, cfg.telemetry, model=model, lookup=lookup)


async def drain(p: DiagnosisPipeline) -> list[SseEvent]:
    return await _all(p.run(ChatRequest(Id="f1", Question="HikariCP pool exhausted?"), None))


async def _all(events: AsyncIterator[SseEvent]) -> list[SseEvent]:
    return [e async for e in events]


FAULTS: dict[str, Callable[[], tuple[Any, Any]]] = {
    "model error (router)": lambda: (FailingModel("router", "error"), OneRunbook(True)),
    "model error (executor)": lambda: (FailingModel("executor", "error"), OneRunbook(True)),
    "model timeout (planner)": lambda: (FailingModel("planner", "timeout"), OneRunbook(True)),
    "exception inside a stage (verifier)": lambda: (FailingModel("verifier", "crash"), OneRunbook(True)),
    "tool timeout": lambda: (RulesModel(), SlowLookup(True)),
    "retrieval outage": lambda: (RulesModel(), DownLookup()),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_each_fault_ends_with_one_done_and_a_matching_status(fault: str) -> None:
    model, lookup = FAULTS[fault]()
    sink = ListSink()
    events = await asyncio.wait_for(drain(pipeline(model, lookup, sink)), 30)
    names = [e.event for e in events]
    assert names.count("done") == 1 and names[-1] == "done", names
    assert names[0] == "metadata"
    outcome = events[-1].outcome  # type: ignore[union-attr]
    finished = [r for r in sink.records if r.kind == "run_finished"]
    assert len(finished) == 1 and finished[0].data["status"] == CLIENT_OUTCOME[outcome], (fault, finished)
    if outcome == "FAILED":
        assert "failure" in names
    else:
        assert "content" in names


async def test_an_audit_outage_does_not_break_the_stream() -> None:
    events = await drain(pipeline(RulesModel(), OneRunbook(True), BrokenSink()))
    assert [e.event for e in events].count("done") == 1 and events[-1].event == "done"


async def test_a_client_that_goes_away_is_recorded_aborted_and_its_tool_call_cancelled() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    class HangingLookup(OneRunbook):
        async def lookup(self, query: str, tool_call_id: str, domain: str | None = None) -> LookupOutcome:
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            raise AssertionError("unreachable")

    sink = ListSink()
    cfg = parse_config({}, "test", env={})
    p = build_pipeline(sink, cfg.harness, cfg.telemetry, model=RulesModel(), lookup=HangingLookup(True))
    gen = p.run(ChatRequest(Id="f2", Question="HikariCP pool exhausted?"), None)

    async def consume() -> None:
        async for _ in gen:
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()  # what Serve does when the HTTP client disconnects mid-stream
    with pytest.raises(asyncio.CancelledError):
        await task
    await gen.aclose()
    assert cancelled.is_set(), "the in-flight tool call was not cancelled"
    finished = [r for r in sink.records if r.kind == "run_finished"]
    assert len(finished) == 1 and finished[0].data["status"] == "ABORTED"


async def test_a_model_past_its_time_releases_what_the_tools_measured() -> None:
    """The answer call times out after the tools ran: the run answers, as a MODEL_TIMEOUT fallback
    with the tools' lines about the asked service and the runbook's guidance, never FAILED."""
    sink = ListSink()
    cfg = parse_config(
        {"harness": {"stage_timeout_s": 0.5}, "telemetry": {"clock": "2026-11-30T10:15:00Z"}}, "test", env={}
    )  # the bundled demo incident's clock: its telemetry is in the window
    slow = build_pipeline(
        sink, cfg.harness, cfg.telemetry, model=FailingModel("executor", "timeout"), lookup=Causes(True)
    )
    question = ChatRequest(Id="f2", Question="payment-service: HikariCP pool exhausted, what is the cause?")
    run = slow.run(question, None)
    events = await asyncio.wait_for(_all(run), 30)
    names = [e.event for e in events]
    assert "failure" not in names and names[-2:] == ["content", "done"]
    content = events[-2]
    assert content.content_type == "SAFE_FALLBACK"  # type: ignore[union-attr]
    payload = content.payload  # type: ignore[union-attr]
    assert payload.fallback_type == "MODEL_TIMEOUT" and events[-1].outcome == "FALLBACK"  # type: ignore[union-attr]
    # The analyzers' cause first, labelled as theirs; then what the model could not do.
    first, second = payload.text.split("\n")[:2]
    assert first.startswith("payment-service: queries waiting on row locks hold its database connections")
    assert first.endswith("(Found by the tools' analysis, not confirmed by the model.)")
    assert second.startswith("The model did not finish its answer in time")
    assert [g for g in payload.gaps if g.startswith("The model did not answer within the run's time budget")]
    # What the tools had established: the demo's payment-service lines, and the runbook's guidance.
    assert payload.measured and all("payment-service" in line for line in payload.measured), payload.measured
    assert payload.next_steps == [
        "Common causes: a slow query holding its connections, or leaked connections. (hikaricp)"
    ]
    finished = [r.data for r in sink.records if r.kind == "run_finished"]
    assert [(f["status"], f["release_outcome"]) for f in finished] == [("FALLBACK", "FALLBACK")]
