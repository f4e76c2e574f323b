"""Tool calling as schema-guided JSON, for engines whose models have no native tool-call format.

With tools available, the model is constrained (JSON-schema guided decoding) to answer either
``{"tool_calls": [{"name": ..., "arguments": {...}}]}`` or its final answer object. Tool results go
back as user messages, so any chat template works (small models' templates know no 'tool' role).
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.model import Message, ModelRequest, ModelResponse, ToolCall

_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.S)

TOOL_INSTRUCTIONS = (
    "\n\nTools you may call:\n{tools}\n"
    'To call tools, answer only {{"tool_calls": [{{"name": "<tool>", "arguments": {{...}}}}]}}. '
    "When you have the evidence you need, answer with the final JSON instead."
)


MAX_TOOL_CALLS = 3  # calls one reply may make (OpenAI's parallel tool calls)


def tool_call_schema(tools: list[dict[str, Any]], most: int = MAX_TOOL_CALLS) -> dict[str, Any]:
    """``most``: 1 where the client asked for no parallel calls (``parallel_tool_calls: false``)."""
    names = [t["function"]["name"] for t in tools]
    return {
        "type": "object",
        "properties": {
            "tool_calls": {
                "type": "array",
                "minItems": 1,
                "maxItems": most,
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "enum": names}, "arguments": {"type": "object"}},
                    "required": ["name", "arguments"],
                },
            }
        },
        "required": ["tool_calls"],
    }


def _describe(tools: list[dict[str, Any]]) -> str:
    lines = []
    for t in tools:
        fn = t["function"]
        params = json.dumps(fn.get("parameters", {}).get("properties", {}), ensure_ascii=False)
        lines.append(f"- {fn['name']}: {fn.get('description', '')} arguments: {params}")
    return "\n".join(lines)


def flatten_messages(request: ModelRequest) -> list[dict[str, str]]:
    """Chat messages any template accepts: tools described in the system prompt, tool turns as user turns."""
    out: list[dict[str, str]] = []
    messages = request.messages
    if request.tools and not any(m.role == "system" for m in messages):
        messages = [Message("system", ""), *messages]  # the tools are described there, so it must exist
    for m in messages:
        content = m.content
        if m.role == "system" and request.tools:
            content = (content + TOOL_INSTRUCTIONS.format(tools=_describe(request.tools))).lstrip("\n")
        if m.role == "tool":
            out.append({"role": "user", "content": f"Tool result for call {m.tool_call_id}:\n{content}"})
        elif m.role == "assistant" and m.tool_calls:
            calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]
            out.append({"role": "assistant", "content": json.dumps({"tool_calls": calls}, ensure_ascii=False)})
        else:
            out.append({"role": m.role, "content": content})
    return out


def guided_schema(request: ModelRequest) -> dict[str, Any] | None:
    """What the decoder must produce: a tool call or the stage's answer, whichever applies."""
    if not request.tools:
        return request.json_schema
    calls = tool_call_schema(request.tools)
    if request.json_schema is None:
        return None  # free text or a tool call; the reply is parsed either way
    answer = dict(request.json_schema)
    defs = answer.pop("$defs", {})  # refs point at the root: hoist the answer's definitions there
    schema: dict[str, Any] = {"anyOf": [calls, answer]}
    if defs:
        schema["$defs"] = defs
    return schema


def parse_reply(text: str, response: ModelResponse, request: ModelRequest) -> ModelResponse:
    """Turn a ``{"tool_calls": [...]}`` reply into ``ModelResponse.tool_calls``."""
    if not request.tools:
        return response
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # text, or JSON nested past the stack: an answer, not a call
        return response
    if not isinstance(data, dict) or not isinstance(data.get("tool_calls"), list):
        return response
    calls = [
        ToolCall(id="", name=str(c.get("name", "")), arguments=c.get("arguments") or {})
        for c in data["tool_calls"]
        if isinstance(c, dict)
    ]
    return ModelResponse(
        text="", reasoning=response.reasoning, tool_calls=calls, finish_reason="tool_calls", usage=response.usage
    )


def to_message(d: dict[str, Any]) -> Message:
    return Message(
        d["role"],
        d.get("content", ""),
        [ToolCall(c["id"], c["name"], c["arguments"]) for c in d.get("tool_calls", [])],
        d.get("tool_call_id"),
    )


def split_reasoning(text: str) -> tuple[str, str | None]:
    """Models that think aloud wrap it in <think>…</think>; the audit keeps it apart from the answer."""
    m = _THINK.match(text)
    if not m:
        return text, None
    return text[m.end() :], m.group(1).strip()
