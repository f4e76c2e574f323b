"""Planner: the plan and the skill (seed 000 §2).

With ``planning: auto`` a skill whose keywords the question contains gives the plan without a model
call (the most specific match wins: the longest matched keywords in total); otherwise one bounded
model call plans and picks a skill from the catalog. The selected skill's steps become the
executor's playbook.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from harness.cluster_targets import read_cluster_question
from harness.contracts import PlannerPlan, RetryContext
from harness.model import Message
from harness.prompts import render
from harness.stages.base import RunContext, call_model, extract_json, history_messages
from harness.tools.kubernetes import KUBERNETES_TOOL_NAMES
from harness.tools.read_skill import Skill

PLANNER_SCHEMA = {
    "type": "object",
    "properties": {
        "selected_skill": {"anyOf": [{"type": "string", "maxLength": 60}, {"type": "null"}]},
        "selection_reason": {"type": "string", "maxLength": 200},
        "plan": {"type": "array", "minItems": 1, "maxItems": 4, "items": {"type": "string", "maxLength": 160}},
        "reasoning": {"type": "string", "maxLength": 200},
    },
    "required": ["selected_skill", "selection_reason", "plan", "reasoning"],
}


def _retry_text(retry: RetryContext | None) -> str:
    if retry is None:
        return ""
    return "retry_context: " + json.dumps(retry.model_dump(), ensure_ascii=False)


def match_skill(question: str, skills: dict[str, Skill]) -> tuple[Skill, list[str]] | None:
    """The skill whose keywords the question holds, most specific first; None when none match."""
    text = question.lower()
    best: tuple[int, Skill, list[str]] | None = None
    for skill in skills.values():
        hits = [k for k in skill.keywords if k and k in text]
        weight = sum(len(k) for k in hits)
        if hits and (best is None or weight > best[0]):
            best = (weight, skill, hits)
    return (best[1], best[2]) if best else None


def skill_plan(skill: Skill, hits: list[str]) -> PlannerPlan:
    steps = [line.strip() for line in skill.body.splitlines() if line.strip()][:4]
    return PlannerPlan(
        selected_skill=skill.name,
        selection_reason=f"the question mentions {', '.join(hits[:4])}",
        plan=steps or [skill.description],
        reasoning="a playbook fits: planned without a model call",
    )


def cluster_plan(ctx: RunContext) -> PlannerPlan | None:
    """When the cluster playbook (harness/cluster_playbook.py, run before planning) found what the question
    names, the plan is to answer from it: no model call chooses it. Where the cluster answered nothing
    (no such resource), planning goes on as without a cluster."""
    found = any(
        e.tool_name in KUBERNETES_TOOL_NAMES and e.result.status == "success" for e in ctx.boundary.ledger.values()
    )
    if not found:
        return None
    asked = read_cluster_question(ctx.question)
    names = [t.name for t in asked.targets] or [n for n in (asked.namespace,) if n]
    return PlannerPlan(
        selected_skill=None,
        selection_reason=f"the question names what to look at in the cluster: {', '.join(names) or 'a count'}",
        plan=["found, described and read the logs of what it names (cluster playbook)", "answer from the findings"],
        reasoning="the cluster decides: planned without a model call",
    )


async def plan(ctx: RunContext, domains: str, skills: dict[str, Skill], retry: RetryContext | None) -> PlannerPlan:
    if ctx.settings.planning == "auto":
        cluster = cluster_plan(ctx)
        if cluster is not None:
            ctx.recorder.timeline("PLANNING", "PLAN_DECISION", "CLUSTER", planner="rules", selected_skill=None)
            return cluster
        matched = match_skill(ctx.question, skills)
        if matched is not None:
            result = skill_plan(*matched)
            ctx.recorder.timeline(
                "PLANNING", "PLAN_DECISION", "SKILL_MATCH", planner="rules", selected_skill=result.selected_skill
            )
            return result
    catalog = "\n".join(f"- {s.name}: {s.description}" for s in skills.values()) or "- (none)"
    system = render("planner", ctx.lang, domains=domains, skills=catalog, retry=_retry_text(retry))
    messages = [Message("system", system), *history_messages(ctx), Message("user", ctx.question)]
    step = ctx.recorder.begin_step()
    response, duration_ms = await call_model(
        ctx,
        phase="PLANNING",
        component="PLANNER",
        stage="planner",
        messages=messages,
        json_schema=PLANNER_SCHEMA,
        budget="planner",
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
    if result.selected_skill not in skills:
        result.selected_skill = None
    return result
