"""A scripted chat model (a neighbour of the harness in its tests).

Replies are queued per stage (router, planner, executor, verifier). A reply is text (a string, or a
mapping serialised to JSON as a model would print it), tool calls, or an error to raise. Usage is
counted deterministically from characters so token reconciliation can be checked exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from harness.model import ModelError, ModelRequest, ModelResponse, ToolCall
from harness.recorder import Usage


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ScriptedModel:
    def __init__(
        self,
        script: dict[str, list[Any]] | None = None,
        fn: Callable[[ModelRequest], ModelResponse] | None = None,
        usage: bool | Callable[[ModelRequest, int], bool] = True,
    ) -> None:
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.fn = fn
        self.usage = usage
        self.requests: list[ModelRequest] = []

    def _usage(self, request: ModelRequest, text: str) -> Usage | None:
        enabled = self.usage(request, len(self.requests)) if callable(self.usage) else self.usage
        if not enabled:
            return None
        prompt = "".join(m.content for m in request.messages) + json.dumps(request.tools)
        return Usage(_tokens(prompt), _tokens(text))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.fn is not None:
            return self.fn(request)
        queue = self.script.get(request.stage)
        if not queue:
            raise AssertionError(f"the script has no reply left for stage {request.stage!r}")
        reply = queue.pop(0)
        if isinstance(reply, dict) and "error" in reply:
            raise ModelError(reply["error"], reply.get("message", "scripted failure"))
        if isinstance(reply, dict) and "tool_calls" in reply:
            calls = [ToolCall(c.get("id", ""), c["name"], c.get("arguments", {})) for c in reply["tool_calls"]]
            text = reply.get("text", "")
            return ModelResponse(
                text=text,
                tool_calls=calls,
                finish_reason="tool_calls",
                usage=self._usage(request, text + json.dumps(reply["tool_calls"])),
            )
        if isinstance(reply, dict) and "text" in reply:
            reply = reply["text"]
        text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
        return ModelResponse(text=text, usage=self._usage(request, text))


def planning_then_unparsable(seen: list[ModelRequest]) -> Callable[[ModelRequest], ModelResponse]:
    """A model that routes to DIAGNOSIS, plans, then answers what no stage can parse, recording every
    request in ``seen``: for tests about what the prompts carry (history, tenants), not the answer."""

    def fn(req: ModelRequest) -> ModelResponse:
        seen.append(req)
        if req.stage == "router":
            return ModelResponse('{"intent": "DIAGNOSIS", "reason": "r", "answer": ""}', usage=Usage(1, 1))
        if req.stage == "planner":
            return ModelResponse('{"selection_reason": "x", "plan": ["p"], "reasoning": "r"}', usage=Usage(1, 1))
        return ModelResponse("not json", usage=Usage(1, 1))

    return fn
