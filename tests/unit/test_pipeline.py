"""The pipeline's shape: event order, the audit records of a run, and cancellation."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

from harness.contracts import ChatRequest
from harness.pipeline import DiagnosisPipeline
from tests.fakes.sinks import ListSink


async def _drain(pipeline: DiagnosisPipeline, req: ChatRequest) -> list[str]:
    return [e.event async for e in pipeline.run(req)]


async def test_events_in_contract_order_and_audited() -> None:
    sink = ListSink()
    events = await _drain(DiagnosisPipeline(sink), ChatRequest(Id="s-1", Question="HikariCP pool exhausted"))
    assert events[0] == "metadata" and events[-1] == "done"
    assert events.count("done") == 1
    assert sum(e in ("content", "failure") for e in events) == 1
    assert sink.timeline()[0] == "RUN_STARTED" and sink.timeline()[-1] == "RUN_FINISHED"
    assert [r.seq for r in sink.records] == list(range(1, len(sink.records) + 1))
    seqs = [r.data["sequence_no"] for r in sink.records if r.kind == "trace_event"]
    assert seqs == list(range(1, len(seqs) + 1))
    finished = sink.records[-1]
    assert finished.kind == "run_finished" and finished.data["status"] == "SUCCEEDED"


async def test_cancelled_run_is_recorded_as_aborted() -> None:
    sink = ListSink()
    gen = DiagnosisPipeline(sink).run(ChatRequest(Id="s-2", Question="q"))
    assert (await gen.__anext__()).event == "metadata"
    await gen.aclose()  # what a client disconnect does to the stream
    finished = [r for r in sink.records if r.kind == "run_finished"]
    assert len(finished) == 1 and finished[0].data["status"] == "ABORTED"


async def test_cancellation_propagates() -> None:
    sink = ListSink()

    async def consume() -> None:
        # The ingress consumes the pipeline inside aclosing(), so a cancelled stream closes it at once.
        async with aclosing(DiagnosisPipeline(sink).run(ChatRequest(Id="s-3", Question="q"))) as events:
            async for _ in events:
                await asyncio.sleep(10)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.05)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:  # pragma: no cover
        raise AssertionError("cancellation was swallowed")
    assert [r.data["status"] for r in sink.records if r.kind == "run_finished"] == ["ABORTED"]
