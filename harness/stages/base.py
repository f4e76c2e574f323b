"""What every stage shares: the run's context and one audited way to call the model."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from harness.model import ChatModel, Message, ModelError, ModelRequest, ModelResponse
from harness.question_scope import QuestionScope
from harness.recorder import RunRecorder
from harness.routing import Embed
from harness.settings import HarnessSettings
from harness.tools.base import LedgerEntry, ToolBoundary


class StageError(Exception):
    """A real failure of a stage; becomes a ``failure`` event with this code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class RunContext:
    question: str
    lang: str
    model: ChatModel
    recorder: RunRecorder
    settings: HarnessSettings
    boundary: ToolBoundary
    history: list[tuple[str, str]] = field(default_factory=list)
    component_rounds: dict[str, int] = field(default_factory=dict)
    embed: Embed | None = None  # the lookup's embedder: the router's exemplars, the verifier's similarity check
    whole_telemetry: bool = False  # the run's telemetry was chosen for this question (the RCA replay)
    telemetry_source: str = ""  # where the tools' telemetry comes from (TelemetrySettings.describe)
    scope: QuestionScope | None = None  # what of the telemetry the question is about, once the tools answered

    def next_round(self, component: str) -> int:
        self.component_rounds[component] = self.component_rounds.get(component, 0) + 1
        return self.component_rounds[component]


async def call_model(
    ctx: RunContext,
    *,
    phase: str,
    component: str,
    stage: str,
    messages: list[Message],
    json_schema: dict[str, Any] | None = None,
    tools: list[dict[str, Any]] | None = None,
    budget: str | None = None,
) -> tuple[ModelResponse, int]:
    """One model call with its MODEL_TOKEN_USAGE event; returns the response and its duration (ms).
    ``budget`` names the stage's output cap (``HarnessSettings.stage_tokens``)."""
    request = ModelRequest(
        messages=messages,
        stage=stage,
        json_schema=json_schema,
        tools=tools or [],
        max_tokens=ctx.settings.tokens(budget) if budget else ctx.settings.max_tokens_per_call,
        timeout_s=ctx.settings.stage_timeout_s,
        repetition_penalty=ctx.settings.repetition_penalty,
    )
    start = time.perf_counter()
    try:
        response = await ctx.model.complete(request)
    except ModelError as err:
        raise StageError(f"MODEL_{err.code}", f"the {stage} model call failed: {err}") from err
    except TimeoutError as err:
        raise StageError("MODEL_TIMEOUT", f"the {stage} model call timed out") from err
    duration_ms = int((time.perf_counter() - start) * 1000)
    ctx.recorder.model_usage(phase, component, ctx.next_round(component), response.usage, duration_ms)
    return response, duration_ms


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.M)


async def run_tool(ctx: RunContext, call_id: str, name: str, args: dict[str, Any]) -> LedgerEntry:
    """One tool call through the boundary, recorded as a ``tool_invocation`` (the model's and the playbook's alike)."""
    entry = await ctx.boundary.call(call_id, name, args)
    ctx.recorder.tool_invocation(
        tool_call_id=call_id,
        tool_name=name,
        request=entry.args,
        status=entry.result.status,
        output_preview=entry.result.preview,
        output_length=len(entry.result.output_text()),
        duration_ms=entry.duration_ms,
        error_message=entry.result.error,
        retrieval=entry.result.retrieval,
    )
    return entry


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in a model reply (tolerating code fences and prose around it)."""
    cleaned = _FENCE.sub("", text.strip())
    try:
        value = json.loads(cleaned)
    except ValueError:
        start, end = cleaned.find("{"), cleaned.rfind("}")
        if start < 0 or end <= start:
            raise ValueError("no JSON object in the reply") from None
        value = json.loads(cleaned[start : end + 1])
    if not isinstance(value, dict):
        raise ValueError("the reply is JSON but not an object")
    return value


def history_messages(ctx: RunContext) -> list[Message]:
    """Earlier turns of the session that fit the history token budget (about 4 characters a token)."""
    budget = ctx.settings.history_token_budget * 4
    picked: list[tuple[str, str]] = []
    for q, a in reversed(ctx.history):
        cost = len(q) + len(a)
        if cost > budget:
            break
        budget -= cost
        picked.append((q, a))
    out: list[Message] = []
    for q, a in reversed(picked):
        out += [Message("user", q), Message("assistant", a)]
    return out
