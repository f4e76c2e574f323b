"""Executor: the tool loop that gathers evidence and drafts ``executor_evidence_v1`` (seed 000 §3).

An async generator: it yields ``StatusEvent``s as tools start and finish, and last an
``ExecutorOutcome``. Malformed final output is re-asked once with the parse error.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from harness.contracts import ExecutorEvidence, ExecutorOutputParseStatus, PlannerPlan, RetryContext, StatusEvent
from harness.model import Message, ToolCall
from harness.prompts import render
from harness.stages.base import RunContext, call_model, extract_json, history_messages

EXECUTOR_SCHEMA = ExecutorEvidence.model_json_schema()


@dataclass
class ExecutorOutcome:
    raw_text: str
    evidence: ExecutorEvidence | None
    parse_status: ExecutorOutputParseStatus


def _parse(text: str) -> tuple[ExecutorEvidence | None, ExecutorOutputParseStatus]:
    if not text.strip():
        return None, ExecutorOutputParseStatus(status="missing", detail="the executor gave no final answer")
    try:
        evidence = ExecutorEvidence.model_validate(extract_json(text))
    except (ValueError, ValidationError) as err:
        detail = str(err).replace("\n", " ")[:300]
        return None, ExecutorOutputParseStatus(status="malformed", detail=detail)
    return evidence, ExecutorOutputParseStatus(status="valid", detail="parsed executor evidence contract")


def _tool_message(call: ToolCall, status: str, output: dict[str, Any]) -> Message:
    content = json.dumps({"tool_call_id": call.id, "status": status, "output": output}, ensure_ascii=False)
    return Message("tool", content, tool_call_id=call.id)


def _unique_ids(calls: list[ToolCall], taken: set[str], run_id: str) -> list[ToolCall]:
    """Model-supplied ids may be missing or reused; the ledger needs them unique within the run."""
    out = []
    for call in calls:
        cid = call.id
        if not cid or cid in taken:
            cid = f"call_{run_id[:8]}_{len(taken) + 1}"
        taken.add(cid)
        out.append(ToolCall(cid, call.name, call.arguments))
    return out


async def execute(
    ctx: RunContext, planner_plan: PlannerPlan, retry: RetryContext | None
) -> AsyncGenerator[StatusEvent | ExecutorOutcome, None]:
    plan_text = json.dumps(planner_plan.model_dump(), ensure_ascii=False)
    retry_text = "retry_context: " + json.dumps(retry.model_dump(), ensure_ascii=False) if retry else ""
    system = render("executor", ctx.lang, plan=plan_text, retry=retry_text)
    messages = [Message("system", system), *history_messages(ctx), Message("user", ctx.question)]
    tools = ctx.boundary.schemas()
    repaired = False
    text = ""
    seen: dict[str, str] = {}  # (tool, arguments) → the call id that already ran it
    force_answer = False
    for round_no in range(ctx.settings.max_tool_steps):
        last_round = force_answer or round_no == ctx.settings.max_tool_steps - 1
        step = ctx.recorder.begin_step()
        response, duration_ms = await call_model(
            ctx,
            phase="AGENT",
            component="DIAGNOSIS_AGENT",
            stage="executor",
            messages=messages,
            tools=[] if last_round else tools,  # the last round must answer
            json_schema=EXECUTOR_SCHEMA,
        )
        calls = [] if last_round else _unique_ids(response.tool_calls, set(ctx.boundary.ledger), ctx.recorder.run_id)
        ctx.recorder.agent_step(
            step,
            message_roles=[m.role for m in messages],
            tool_names=[c.name for c in calls],
            assistant_text=response.text,
            reasoning_text=response.reasoning,
            duration_ms=duration_ms,
            usage=response.usage,
        )
        if calls:
            messages.append(Message("assistant", response.text, tool_calls=calls))
            fresh = 0
            for call in calls:
                signature = f"{call.name}:{json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)}"
                if signature in seen:
                    # A repeated call adds no evidence: point at the earlier result instead of running it.
                    note = {"status": "duplicate", "note": f"already called as {seen[signature]}; use that result"}
                    messages.append(
                        Message("tool", json.dumps({"tool_call_id": call.id, **note}), tool_call_id=call.id)
                    )
                    continue
                seen[signature] = call.id
                fresh += 1
                yield StatusEvent(code="DIAGNOSIS_RUNNING", detail=f"tool {call.name} started")
                entry = await ctx.boundary.call(call.id, call.name, call.arguments)
                ctx.recorder.tool_invocation(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    request=entry.args,
                    status=entry.result.status,
                    output_preview=entry.result.preview,
                    output_length=len(entry.result.output_text()),
                    duration_ms=entry.duration_ms,
                    error_message=entry.result.error,
                    retrieval=entry.result.retrieval,
                )
                yield StatusEvent(code="DIAGNOSIS_RUNNING", detail=f"tool {call.name} finished: {entry.result.status}")
                messages.append(_tool_message(call, entry.result.status, entry.result.output))
            force_answer = fresh == 0  # only repeats: the evidence is in; the next round must answer
            continue
        text = response.text
        evidence, status = _parse(text)
        if evidence is not None or repaired or last_round:
            yield ExecutorOutcome(text, evidence, status)
            return
        # One repair: show the model its own answer and the parse error.
        repaired = True
        messages += [
            Message("assistant", text),
            Message(
                "user",
                f"Your answer is not valid executor_evidence_v1 JSON ({status.detail}). "
                "Answer again with the JSON object only.",
            ),
        ]
    evidence, status = _parse(text)
    yield ExecutorOutcome(text, evidence, status)
