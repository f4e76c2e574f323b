"""Router: one model call decides whether the question needs a diagnosis (seed e2e stage 1)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.model import Message
from harness.prompts import prompt
from harness.stages.base import RunContext, call_model, extract_json

INTENTS = ("DIAGNOSIS", "CHITCHAT", "OTHER")
ROUTER_SCHEMA = {
    "type": "object",
    "properties": {
        "intent": {"type": "string", "enum": list(INTENTS)},
        "reason": {"type": "string"},
        "answer": {"type": "string"},
    },
    "required": ["intent", "reason", "answer"],
}


@dataclass
class RouteDecision:
    intent: str
    reason: str
    answer: str


async def route(ctx: RunContext) -> RouteDecision:
    messages = [Message("system", prompt("router", ctx.lang)), Message("user", ctx.question)]
    response, _ = await call_model(
        ctx, phase="ROUTING", component="INTENT_ROUTER", stage="router", messages=messages, json_schema=ROUTER_SCHEMA
    )
    ctx.recorder.timeline("ROUTING", "ROUTING_ATTEMPT", None, router="model")
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
