"""Session memory shared through the cluster's memory actor (deployments/session_memory.py): a turn
written through one replica's client is read through another's; a store that does not answer means a
chat without history, never a failed one."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from deployments.session_memory import SharedHistory, memory_actor
from harness.contracts import ChatRequest
from harness.model import ModelRequest
from harness.pipeline import DiagnosisPipeline
from harness.settings import HarnessSettings
from tests.fakes.scripted_model import ScriptedModel, planning_then_unparsable
from tests.fakes.sinks import ListSink

pytestmark = pytest.mark.slow

MODEL_DRIVEN = {"routing": "model", "planning": "model", "playbook": False, "grounding": "model"}


def replica(history: SharedHistory, seen: list[ModelRequest]) -> DiagnosisPipeline:
    """One ingress replica's pipeline: its own process state, the shared memory."""

    fn = planning_then_unparsable(seen)

    return DiagnosisPipeline(ListSink(), HarnessSettings(**MODEL_DRIVEN), model=ScriptedModel(fn=fn), history=history)


async def ask(p: DiagnosisPipeline, session: str, question: str, tenant: str) -> list[Any]:
    return [e async for e in p.run(ChatRequest(Id=session, Question=question), tenant)]


async def test_a_turn_on_one_replica_is_seen_on_the_other(serve_app: dict[str, str]) -> None:
    actor = memory_actor(f"test-{uuid.uuid4().hex[:8]}")
    seen_a: list[ModelRequest] = []
    seen_b: list[ModelRequest] = []
    # Two clients of one actor, as two ingress replicas hold them.
    a, b = replica(SharedHistory(actor, 5.0), seen_a), replica(SharedHistory(actor, 5.0), seen_b)
    await ask(a, "sess", "payments fail since the 10:00 deploy", "team-a")
    events = await ask(b, "sess", "and what about now?", "team-a")
    assert events[-1].event == "done"
    planner = next(r for r in seen_b if r.stage == "planner")
    assert any("payments fail since the 10:00 deploy" in m.content for m in planner.messages)
    # Another tenant with the same session id sees nothing of it, on either replica.
    seen_b.clear()
    await ask(b, "sess", "hello?", "team-b")
    assert not any("payments fail" in m.content for r in seen_b for m in r.messages)


async def test_a_store_that_does_not_answer_means_no_history_not_a_failure(serve_app: dict[str, str]) -> None:
    import ray

    actor = memory_actor(f"test-{uuid.uuid4().hex[:8]}")
    ray.kill(actor, no_restart=True)
    history = SharedHistory(actor, timeout_s=0.3)
    seen: list[ModelRequest] = []
    start = time.monotonic()
    events = await ask(replica(history, seen), "sess", "payments fail", "team-a")
    assert events[-1].event == "done" and events[-1].outcome != "FAILED"
    assert history.failures == 2  # the read before the run and the write after it
    assert time.monotonic() - start < 5
