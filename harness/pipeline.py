"""The diagnosis pipeline: one async generator of SSE events per run.

Every caller (the HTTP ingress, the CLI, tests) drains this generator; there is no second copy of
the loop. The generator always ends with exactly one ``done`` event unless it is cancelled, and a
cancelled run is recorded as ABORTED before the cancellation propagates.

Walking-skeleton stage: until the LLM and harness issues land, routing, planning, execution and
verification are not wired in, so a run answers with a CHAT_ANSWER saying so (no model is called).
The run lifecycle, audit trail and event framing around it are the real ones.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator, Callable

from harness.contracts import (
    ChatAnswerPayload,
    ChatRequest,
    ContentEvent,
    DoneEvent,
    FailureEvent,
    MetadataEvent,
    SseEvent,
    StatusEvent,
)
from harness.protocols import AuditSink
from harness.recorder import RunRecorder
from harness.settings import HarnessSettings

log = logging.getLogger(__name__)

SKELETON_ANSWER = (
    "raydiag received your question, but the diagnosis stages (router, planner, executor, "
    "verifier) are not wired into this build yet, so no model was called and no diagnosis was made."
)


class StageError(Exception):
    """A real failure of a stage; becomes a ``failure`` event with this code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def new_run_id() -> str:
    return str(uuid.uuid4())


class DiagnosisPipeline:
    def __init__(
        self,
        sink: AuditSink,
        settings: HarnessSettings | None = None,
        run_id_factory: Callable[[], str] = new_run_id,
    ) -> None:
        self.sink = sink
        self.settings = settings or HarnessSettings()
        self.run_id_factory = run_id_factory

    async def run(self, request: ChatRequest, tenant_id: str | None = None) -> AsyncGenerator[SseEvent, None]:
        run_id = self.run_id_factory()
        rec = RunRecorder(self.sink, request.Id, run_id, request.Question, tenant_id=tenant_id)
        rec.start()
        try:
            yield MetadataEvent(session_id=request.Id, run_id=run_id)
            yield StatusEvent(code="ROUTING", detail="routing the question")
            rec.timeline("ROUTING", "ROUTING_ATTEMPT", None, router="none")
            rec.timeline("ROUTING", "ROUTING_DECISION", "SKELETON", intent=None, reason="no model configured")
            payload = ChatAnswerPayload(text=SKELETON_ANSWER)
            rec.timeline("RELEASE", "RELEASE_DECISION", "SUCCESS", content_type="CHAT_ANSWER")
            yield ContentEvent(content_type="CHAT_ANSWER", payload=payload)
            rec.finish("SUCCEEDED", release_outcome="SUCCESS", content_type="CHAT_ANSWER", answer=payload.text)
            yield DoneEvent(outcome="SUCCESS")
        except (asyncio.CancelledError, GeneratorExit):
            rec.finish("ABORTED", error_code="CLIENT_DISCONNECTED", error_message="the client went away")
            raise
        except StageError as err:
            log.warning("run %s failed in a stage: %s", run_id, err.code)
            rec.finish("FAILED", release_outcome="FAILED", error_code=err.code, error_message=err.message)
            yield FailureEvent(error_code=err.code, message=err.message)
            yield DoneEvent(outcome="FAILED")
        except Exception as err:
            log.exception("run %s failed", run_id)
            rec.finish("FAILED", release_outcome="FAILED", error_code="INTERNAL", error_message=str(err))
            yield FailureEvent(error_code="INTERNAL", message="the diagnosis failed; see the run's trace")
            yield DoneEvent(outcome="FAILED")
