"""The chat-model contract the harness speaks; deployments/llm.py serves it with vLLM."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from harness.recorder import Usage

Role = Literal["system", "user", "assistant", "tool"]


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class Message:
    role: Role
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None


@dataclass
class ModelRequest:
    messages: list[Message]
    stage: str  # router | planner | executor | verifier: lets a scripted model answer per stage
    json_schema: dict[str, Any] | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int = 1024
    temperature: float = 0.0
    timeout_s: float = 120.0
    repetition_penalty: float = 1.0


@dataclass
class ModelResponse:
    text: str
    reasoning: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    usage: Usage | None = None


class ModelError(Exception):
    """The model could not answer (engine down, timeout, context too long, bad schema)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ChatModel(Protocol):
    async def complete(self, request: ModelRequest) -> ModelResponse: ...
