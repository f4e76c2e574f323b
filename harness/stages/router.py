"""Router: does the question need a diagnosis (seed e2e stage 1)?

With ``routing: auto`` the rules and exemplar similarity of harness/routing.py decide, and a chat
answer is one short model call; the router model is asked only when they cannot decide. With
``routing: model`` (or undecided) one JSON-schema call classifies and, for chat, answers at once.
``ROUTING_ATTEMPT`` records which decided.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cluster.findings import workload_of_pod
from harness.cluster_targets import read_cluster_question
from harness.model import Message
from harness.prompts import prompt
from harness.routing import ExemplarRouter, route_without_model
from harness.stages.base import RunContext, call_model, extract_json

INTENTS = ("DIAGNOSIS", "CHITCHAT", "OTHER")
ROUTER_SCHEMA = {
    "type": "object",
    "properties": {
        "intent": {"type": "string", "enum": list(INTENTS)},
        "reason": {"type": "string", "maxLength": 160},
        "answer": {"type": "string", "maxLength": 400},
    },
    "required": ["intent", "reason", "answer"],
}


@dataclass
class RouteDecision:
    intent: str
    reason: str
    answer: str


async def chat_answer(ctx: RunContext) -> str:
    messages = [Message("system", prompt("chat", ctx.lang)), Message("user", ctx.question)]
    response, _ = await call_model(
        ctx, phase="ROUTING", component="CHAT", stage="chat", messages=messages, budget="chat"
    )
    return response.text.strip()


_HEALTH = re.compile(r"\b(?:health\w*|status|wrong|issue|problem|down|failing|broken|errors?|crash\w*)\b", re.I)


_LOGS = re.compile(r"\blogs?\b|日志", re.I)


def generated(name: str) -> bool:
    """A pod's generated name (``catalogue-f7687cb4-zsngc``): only a cluster has it."""
    return workload_of_pod(name) != name


def resource_like(name: str) -> bool:
    """A name as resources are named (``java-api-checker``, ``web-1``), not a word ("the job scheduler")."""
    return "-" in name or any(c.isdigit() for c in name)


def about_the_cluster(ctx: RunContext) -> bool:
    """With a cluster connected, a question that asks it something (a count, a resource of a named kind, what
    is wrong with something it names, the logs of a pod) is a diagnosis whatever its wording: "is rabbitmq
    healthy?" is no small talk, while "how do I install kafka?" stays for the other rules."""
    if "kubectl_describe" not in ctx.boundary.tools:
        return False
    asked = read_cluster_question(ctx.question)
    health = bool(_HEALTH.search(ctx.question))
    logs = bool(_LOGS.search(ctx.question))
    return bool(asked.count_kind) or any(
        (t.kind and resource_like(t.name)) or health or (logs and generated(t.name)) for t in asked.targets
    )


async def route(ctx: RunContext, exemplars: ExemplarRouter | None = None) -> RouteDecision:
    if about_the_cluster(ctx):
        ctx.recorder.timeline("ROUTING", "ROUTING_ATTEMPT", None, router="cluster", history_turns=len(ctx.history))
        reason = "the question asks the connected cluster about a resource it names"
        ctx.recorder.timeline("ROUTING", "ROUTING_DECISION", "DIAGNOSIS", intent="DIAGNOSIS", reason=reason)
        return RouteDecision("DIAGNOSIS", reason, "")
    if ctx.settings.routing == "auto":
        decided = await route_without_model(ctx.question, exemplars)
        if decided is not None:
            ctx.recorder.timeline(
                "ROUTING", "ROUTING_ATTEMPT", None, router=decided.how, history_turns=len(ctx.history)
            )
            answer = await chat_answer(ctx) if decided.intent != "DIAGNOSIS" else ""
            ctx.recorder.timeline(
                "ROUTING", "ROUTING_DECISION", decided.intent, intent=decided.intent, reason=decided.detail
            )
            return RouteDecision(decided.intent, decided.detail, answer)
    messages = [Message("system", prompt("router", ctx.lang)), Message("user", ctx.question)]
    response, _ = await call_model(
        ctx,
        phase="ROUTING",
        component="INTENT_ROUTER",
        stage="router",
        messages=messages,
        json_schema=ROUTER_SCHEMA,
        budget="router",
    )
    ctx.recorder.timeline("ROUTING", "ROUTING_ATTEMPT", None, router="model", history_turns=len(ctx.history))
    try:
        data = extract_json(response.text)
        intent = str(data.get("intent", "")).upper()
        if intent not in INTENTS:
            raise ValueError(f"unknown intent {intent!r}")
        decision = RouteDecision(intent, str(data.get("reason", "")), str(data.get("answer", "")))
    except ValueError as err:
        # An unreadable routing answer must not skip the evidence checks: diagnose.
        decision = RouteDecision("DIAGNOSIS", f"router output unusable ({err}); diagnosing", "")
    ctx.recorder.timeline(
        "ROUTING", "ROUTING_DECISION", decision.intent, intent=decision.intent, reason=decision.reason
    )
    return decision
