"""Executor: gathers evidence and drafts ``executor_evidence_v1`` (seed 000 §3).

An async generator: it yields ``StatusEvent``s as tools start and finish, and last an
``ExecutorOutcome``. The selected skill's playbook runs first (harness/playbook.py). Then, with
``grounding: constructed`` (the default), up to ``max_tool_steps - 1`` rounds in which the model may
call more tools, and one final answer in a per-run schema whose citations are enums of the run's
evidence (harness/stages/answer.py). With ``grounding: model`` the model writes the whole contract
itself in a tool loop whose last round must answer, and malformed output is re-asked once.
A retry round (LOW_CONFID) keeps the ledger: it starts from everything gathered so far.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from harness.contracts import ExecutorEvidence, ExecutorOutputParseStatus, PlannerPlan, RetryContext, StatusEvent
from harness.evidence_catalog import Span, build_catalog, candidate_components
from harness.model import Message, ModelResponse, ToolCall
from harness.playbook import about_the_question, run_playbook
from harness.prompts import render
from harness.question_scope import limitation, question_scope
from harness.stages.analyzed import decided_by_the_cluster, decisive_claim
from harness.stages.answer import (
    RUNBOOK_TOOL,
    AnswerError,
    answer_schema,
    evidence_text,
    raw_answer,
    retry_text,
    to_evidence,
)
from harness.stages.base import RunContext, call_model, extract_json, history_messages, run_tool

EXECUTOR_SCHEMA = ExecutorEvidence.model_json_schema()
DONE_SCHEMA = {"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"]}


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


def _signature(name: str, args: Any) -> str:
    return f"{name}:{json.dumps(args, sort_keys=True, ensure_ascii=False)}"


class _Calls:
    """Runs one model round's tool calls: repeats of an earlier call are answered with a pointer to it."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.fresh = 0
        self.seen = {_signature(e.tool_name, e.args): cid for cid, e in ctx.boundary.ledger.items()}

    async def run(self, calls: list[ToolCall], messages: list[Message]) -> AsyncGenerator[StatusEvent, None]:
        """Yields status events; afterwards ``fresh`` says how many of the calls were new."""
        self.fresh = 0
        for call in calls:
            signature = _signature(call.name, call.arguments)
            if signature in self.seen:
                # A repeated call adds no evidence: point at the earlier result instead of running it.
                note = {"status": "duplicate", "note": f"already called as {self.seen[signature]}; use that result"}
                messages.append(Message("tool", json.dumps({"tool_call_id": call.id, **note}), tool_call_id=call.id))
                continue
            self.seen[signature] = call.id
            self.fresh += 1
            yield StatusEvent(code="DIAGNOSIS_RUNNING", detail=f"tool {call.name} started")
            entry = await run_tool(self.ctx, call.id, call.name, call.arguments)
            yield StatusEvent(code="DIAGNOSIS_RUNNING", detail=f"tool {call.name} finished: {entry.result.status}")
            messages.append(_tool_message(call, entry.result.status, entry.result.output))


def _record_step(
    ctx: RunContext, step: int, messages: list[Message], calls: list[ToolCall], response: ModelResponse, ms: int
) -> None:
    ctx.recorder.agent_step(
        step,
        message_roles=[m.role for m in messages],
        tool_names=[c.name for c in calls],
        assistant_text=response.text,
        reasoning_text=response.reasoning,
        duration_ms=ms,
        usage=response.usage,
    )


EARLY_FINDINGS = 3


def first_findings(spans: list[Span]) -> list[StatusEvent]:
    """What the tools measured about the asked components, and the runbook found, streamed while the
    model writes (tens of seconds on a CPU): tool output verbatim, labelled as not yet checked, never
    model text. The final answer's findings are the model's and the verifier's; these are their input."""
    measured = [s for s in spans if s.tool_name != RUNBOOK_TOOL][:EARLY_FINDINGS]
    events = [
        StatusEvent(code="DIAGNOSIS_RUNNING", detail=f"FINDING (measured by {s.tool_name}, not yet checked): {s.text}")
        for s in measured
    ]
    runbook = next((s for s in spans if s.tool_name == RUNBOOK_TOOL), None)
    if runbook is not None:
        detail = f"GUIDANCE (runbook {runbook.key.split('#')[0]}): {runbook.text}"
        events.append(StatusEvent(code="DIAGNOSIS_RUNNING", detail=detail))
    return events


def _evidence_prompt(ctx: RunContext) -> tuple[list[Span], list[str], str]:
    """The run's citable spans (telemetry only of what the question is about), the services in scope,
    and the user message that shows both."""
    ctx.scope = question_scope(ctx.question, ctx.boundary.ledger, ctx.whole_telemetry)
    ledger = about_the_question(ctx.boundary.ledger, ctx.scope.has_telemetry)
    spans = build_catalog(ledger, ctx.settings.max_evidence_spans, ctx.scope.covers_key)
    components = [c for c in candidate_components(ctx.boundary.ledger) if ctx.scope.covers(c)]
    absent = limitation(ctx.scope, ctx.lang)
    return spans, components, f"{ctx.question}\n\n{evidence_text(spans, components, ctx.lang, absent)}"


async def _agent_call(ctx: RunContext, messages: list[Message], **kwargs: Any) -> tuple[int, ModelResponse, int]:
    """One executor model call as a new agent step: (step index, response, duration ms)."""
    step = ctx.recorder.begin_step()
    response, ms = await call_model(
        ctx, phase="AGENT", component="DIAGNOSIS_AGENT", stage="executor", messages=messages, **kwargs
    )
    return step, response, ms


async def execute(
    ctx: RunContext,
    planner_plan: PlannerPlan,
    retry: RetryContext | None,
    playbook: list[tuple[str, dict[str, Any]]] | None = None,
) -> AsyncGenerator[StatusEvent | ExecutorOutcome, None]:
    if playbook and ctx.settings.playbook and retry is None:
        async for event in run_playbook(ctx, planner_plan.selected_skill or "skill", playbook):
            yield event
    loop = _grounded if ctx.settings.grounding == "constructed" else _model_written
    async for item in loop(ctx, planner_plan, retry):
        yield item


async def _grounded(
    ctx: RunContext, planner_plan: PlannerPlan, retry: RetryContext | None
) -> AsyncGenerator[StatusEvent | ExecutorOutcome, None]:
    plan_text = json.dumps(planner_plan.model_dump(), ensure_ascii=False)
    calls = _Calls(ctx)
    for _ in range(ctx.settings.max_tool_steps - 1):
        _, _, user = _evidence_prompt(ctx)
        system = render("executor", ctx.lang, plan=plan_text, retry=retry_text(retry, ctx.lang))
        messages = [Message("system", system), *history_messages(ctx), Message("user", user)]
        step, response, ms = await _agent_call(
            ctx, messages, tools=ctx.boundary.schemas(), json_schema=DONE_SCHEMA, budget="executor_tools"
        )
        round_calls = _unique_ids(response.tool_calls, set(ctx.boundary.ledger), ctx.recorder.run_id)
        _record_step(ctx, step, messages, round_calls, response, ms)
        if not round_calls:
            break
        async for event in calls.run(round_calls, messages):
            yield event
        if calls.fresh == 0:
            break  # only repeats: the evidence is in
    spans, components, user = _evidence_prompt(ctx)
    if not spans:
        status = ExecutorOutputParseStatus(status="missing", detail="no tool returned citable evidence")
        yield ExecutorOutcome("", None, status)
        return
    if retry is None:
        for event in first_findings(spans):
            yield event
    system = render("answer", ctx.lang, retry=retry_text(retry, ctx.lang))
    messages = [Message("system", system), Message("user", user)]
    decided = ctx.scope is not None and decided_by_the_cluster(ctx.boundary.ledger, ctx.scope, ctx.question)
    step, response, ms = await _agent_call(
        ctx, messages, json_schema=answer_schema(spans, components, decided), budget="executor_answer"
    )
    _record_step(ctx, step, messages, [], response, ms)
    try:
        data = extract_json(response.text)
        evidence = to_evidence(data, spans, components)
    except (AnswerError, ValueError, ValidationError) as err:  # an engine that ignored the schema
        detail = str(err).replace("\n", " ")[:300]
        status = ExecutorOutputParseStatus(status="malformed" if response.text.strip() else "missing", detail=detail)
        yield ExecutorOutcome(response.text, None, status)
        return
    if decided and not any(c.claim_type == "finding" for c in evidence.claims):
        # The model's one finding did not survive (it cited only what it copied from a runbook): the
        # deciding fact stands as the tool's own line, marked added, so the draft is not "no evidence".
        fact = decisive_claim(ctx.boundary.ledger, ctx.scope, ctx.question)
        if fact is not None:
            evidence = evidence.model_copy(update={"claims": [fact, *evidence.claims]})
    status = ExecutorOutputParseStatus(status="valid", detail="grounded answer; bindings copied from cited spans")
    yield ExecutorOutcome(raw_answer(data), evidence, status)


async def _model_written(
    ctx: RunContext, planner_plan: PlannerPlan, retry: RetryContext | None
) -> AsyncGenerator[StatusEvent | ExecutorOutcome, None]:
    plan_text = json.dumps(planner_plan.model_dump(), ensure_ascii=False)
    retry_note = "retry_context: " + json.dumps(retry.model_dump(), ensure_ascii=False) if retry else ""
    system = render("executor_contract", ctx.lang, plan=plan_text, retry=retry_note)
    messages = [Message("system", system), *history_messages(ctx), Message("user", ctx.question)]
    if ctx.boundary.ledger:
        # What the playbook (or an earlier round) gathered is part of the conversation: a retry remembers.
        earlier = list(ctx.boundary.ledger.values())
        messages.append(
            Message("assistant", "", tool_calls=[ToolCall(e.tool_call_id, e.tool_name, e.args) for e in earlier])
        )
        messages += [
            _tool_message(ToolCall(e.tool_call_id, e.tool_name, e.args), e.result.status, e.result.output)
            for e in earlier
        ]
    tools = ctx.boundary.schemas()
    calls = _Calls(ctx)
    repaired = False
    text = ""
    force_answer = False
    for round_no in range(ctx.settings.max_tool_steps):
        last_round = force_answer or round_no == ctx.settings.max_tool_steps - 1
        step, response, ms = await _agent_call(
            ctx,
            messages,
            tools=[] if last_round else tools,
            json_schema=EXECUTOR_SCHEMA,  # the last round must answer
        )
        round_calls = (
            [] if last_round else _unique_ids(response.tool_calls, set(ctx.boundary.ledger), ctx.recorder.run_id)
        )
        _record_step(ctx, step, messages, round_calls, response, ms)
        if round_calls:
            messages.append(Message("assistant", response.text, tool_calls=round_calls))
            async for event in calls.run(round_calls, messages):
                yield event
            force_answer = calls.fresh == 0  # only repeats: the evidence is in; the next round must answer
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
