"""The shapes of what the HTTP API answers, for its OpenAPI description (deployments/api_docs.py) and
the MCP tools' output schemas. The routes build their JSON themselves; these models say what it is."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ErrorDetail(BaseModel):
    code: str = Field(description="raydiag's error code (INVALID_REQUEST, TOO_MANY_RUNS, BODY_TOO_LARGE, ...)")
    message: str
    type: str = Field(description="OpenAI's error type (invalid_request_error, authentication_error, ...)")
    param: str | None = Field(default=None, description="The parameter at fault, where one is")


class ErrorBody(BaseModel):
    """Every error answered before a stream starts, on every route."""

    error: ErrorDetail


class RunSummary(BaseModel):
    run_id: str
    status: str | None = None
    release_outcome: str | None = None
    query: str | None = None
    total_token_count: int | None = None
    created_at: str | None = None


class RunList(BaseModel):
    session_id: str
    runs: list[RunSummary] = Field(description="Newest first")


class Trace(BaseModel):
    """One run's audit trail (seed e2e §8): the run row, its timeline, steps, tool calls and a summary."""

    model_config = ConfigDict(extra="allow")
    run: dict[str, Any]
    timeline: list[dict[str, Any]] = Field(default_factory=list)
    toolInvocations: list[dict[str, Any]] = Field(default_factory=list)
    summary: dict[str, Any] = Field(
        default_factory=dict, description="Counts, tokens reconciled, and whether the trail is complete"
    )


class FeedbackStored(BaseModel):
    stored: Literal[True]
    runId: str


class AlertAnswer(BaseModel):
    started: bool
    reason: str | None = Field(default=None, description="Why nothing started: resolved or duplicate")
    sessionId: str | None = None
    runId: str | None = None


class ComponentState(BaseModel):
    model_config = ConfigDict(extra="allow")
    state: str = Field(description="ok, degraded, unavailable, down or stopping")
    error: str | None = None


class Readiness(BaseModel):
    status: Literal["ok", "degraded", "unavailable", "stopping"]
    components: dict[str, ComponentState]


class Liveness(BaseModel):
    status: Literal["alive"]


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ToolCallOut(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: dict[str, str] = Field(description="name, and arguments as a JSON string")


class AssistantOut(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCallOut] | None = None


class Choice(BaseModel):
    index: int
    message: AssistantOut
    finish_reason: str = Field(description="stop, length or tool_calls")
    logprobs: None = None


class ChatCompletion(BaseModel):
    """A completion (``stream: false``). With ``stream: true`` the answer is ``text/event-stream``:
    ``chat.completion.chunk`` objects, then ``data: [DONE]``."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str = Field(description="Floats, or base64 of little-endian float32")


class EmbeddingUsage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: EmbeddingUsage
