"""Planner: one model call turns the question into a plan and picks a skill (seed 000 §2)."""

from __future__ import annotations

import json

from pydantic import ValidationError

from harness.contracts import PlannerPlan, RetryContext
from harness.model import Message
from harness.prompts import render
from harness.stages.base import RunContext, call_model, extract_json, history_messages

PLANNER_SCHEMA = PlannerPlan.model_json_schema()


def _retry_text(retry: RetryContext | None) -> str:
    if retry is None:
        return ""
    return "retry_context: " + json.dumps(retry.model_dump(), ensure_ascii=False)


async def plan(ctx: RunContext, domains: str, skill_catalog: dict[str, str], retry: RetryContext | None) -> PlannerPlan:
    skills = "\n".join(f"- {name}: {desc}" for name, desc in skill_catalog.items()) or "- (none)"
    system = render("planner", ctx.lang, domains=domains, skills=skills, retry=_retry_text(retry))
    messages = [Message("system", system), *history_messages(ctx), Message("user", ctx.question)]
    step = ctx.recorder.begin_step()
    response, duration_ms = await call_model(
        ctx, phase="PLANNING", component="PLANNER", stage="planner", messages=messages, json_schema=PLANNER_SCHEMA
    )
    ctx.recorder.agent_step(
        step,
        message_roles=[m.role for m in messages],
        tool_names=[],
        assistant_text=response.text,
        reasoning_text=response.reasoning,
        duration_ms=duration_ms,
        usage=response.usage,
        agent_name="planner",
        phase="PLANNING",
    )
    try:
        result = PlannerPlan.model_validate(extract_json(response.text))
    except (ValueError, ValidationError):
        result = PlannerPlan(
            selected_skill=None,
            selection_reason="the planner's answer was unusable; falling back to a knowledge lookup",
            plan=["lookup_knowledge for the question", "answer only from the evidence found"],
            reasoning="fallback plan",
        )
    if result.selected_skill not in skill_catalog:
        result.selected_skill = None
    return result
