"""What ``POST /v1/chat/completions`` accepts: the request shapes current OpenAI SDKs and LangChain send.

Every parameter is honoured or refused by name (a 400 whose ``param`` says which), never silently
dropped: an unknown field is refused, and so is a known one this service cannot honour (``n`` > 1,
``logprobs``, image or audio content). Messages take every role a framework sends — ``developer``
(read as ``system``), content as a list of text parts, assistant ``tool_calls`` with ``content: null``,
``tool`` results — and become harness messages, so tool turns reach the model exactly as the
diagnosis harness's own do (harness/json_tools.py: tool results as user turns, any chat template).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.model import Message, ModelRequest, ToolCall

TEXT_ONLY = "this model reads text only: send text parts"


class TextPart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["text"]
    text: str


class RefusalPart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["refusal"]
    refusal: str


def _text_parts(parts: list[dict[str, Any]], allowed: tuple[str, ...] = ("text",)) -> list[dict[str, Any]]:
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in allowed:
            raise ValueError(f"{TEXT_ONLY} (got a {kind!r} part)")
    return parts


def _joined(content: str | list[TextPart] | list[TextPart | RefusalPart] | None) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "\n".join(p.text if isinstance(p, TextPart) else p.refusal for p in content)


class _Message(BaseModel):
    # Fields a client echoes back from an earlier response (audio, annotations, function_call) are
    # accepted only empty: a value there would be something the model is never shown.
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, max_length=64, description="Accepted; not shown to the model")


class _TextMessage(_Message):
    content: str | list[TextPart]

    @field_validator("content", mode="before")
    @classmethod
    def _parts(cls, v: Any) -> Any:
        return _text_parts(v) if isinstance(v, list) else v


class SystemMessage(_TextMessage):
    role: Literal["system", "developer"]


class UserMessage(_TextMessage):
    role: Literal["user"]


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=128)
    arguments: str = Field(description="The arguments as a JSON object, in a string (OpenAI's shape)")


class ToolCallIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=128)
    type: Literal["function"] = "function"
    function: FunctionCall


class AssistantMessage(_Message):
    role: Literal["assistant"]
    content: str | list[TextPart | RefusalPart] | None = None
    refusal: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    audio: None = None
    annotations: list[Any] | None = Field(default=None, max_length=0)
    function_call: None = None

    @model_validator(mode="after")
    def _says_something(self) -> AssistantMessage:
        if self.content is None and not self.tool_calls and self.refusal is None:
            raise ValueError("an assistant message needs content, tool_calls or refusal")
        return self


class ToolMessage(_TextMessage):
    role: Literal["tool"]
    tool_call_id: str = Field(min_length=1, max_length=128)


AnyMessage = Annotated[SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")]


class FunctionDef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None


class Tool(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["function"]
    function: FunctionDef


class NamedToolChoice(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["function"]
    function: dict[Literal["name"], str]


class JsonSchemaFormat(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=64)
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["text", "json_object", "json_schema"] = "text"
    json_schema: JsonSchemaFormat | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """The parameters this service honours. Anything else is refused by name."""

    model_config = ConfigDict(extra="forbid")
    model: str | None = Field(default=None, description="The served model (GET /v1/models); another is a 404")
    messages: list[AnyMessage] = Field(min_length=1, max_length=256)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    max_completion_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    stop: str | list[str] | None = None
    seed: int | None = Field(default=None, ge=-(2**63), lt=2**63)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    n: int | None = Field(default=None, description="Only one choice is generated: n is 1")
    response_format: ResponseFormat | None = None
    tools: list[Tool] | None = Field(default=None, max_length=64)
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    logprobs: Literal[False] | None = Field(default=None, description="Log probabilities are not returned")
    user: str | None = Field(default=None, max_length=256, description="Recorded in the run's audit trail")

    @field_validator("stop")
    @classmethod
    def _stops(cls, v: str | list[str] | None) -> str | list[str] | None:
        stops = [v] if isinstance(v, str) else v or []
        if len(stops) > 4 or any(not s for s in stops):
            raise ValueError("stop takes up to 4 non-empty strings")
        return v

    @field_validator("n")
    @classmethod
    def _one_choice(cls, v: int | None) -> int | None:
        if v not in (None, 1):
            raise ValueError("only one choice is generated here: send n = 1 or leave it out")
        return v

    @model_validator(mode="after")
    def _tool_choice_names_a_tool(self) -> ChatCompletionRequest:
        if isinstance(self.tool_choice, NamedToolChoice):
            names = {t.function.name for t in self.tools or []}
            if self.tool_choice.function.get("name") not in names:
                raise ValueError("tool_choice names a function that is not in tools")
        elif self.tool_choice in ("auto", "required") and not self.tools:
            raise ValueError(f"tool_choice {self.tool_choice!r} needs tools")
        return self

    # -- what the engine is asked -------------------------------------------------------------

    def max_new_tokens(self) -> int:
        return self.max_completion_tokens or self.max_tokens or 512

    def sampling(self) -> dict[str, Any]:
        """The sampling parameters the engine applies (deployments/llm.py), defaults left out."""
        stops = [self.stop] if isinstance(self.stop, str) else self.stop
        given = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "stop": stops,
            "seed": self.seed,
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
        }
        return {k: v for k, v in given.items() if v is not None}

    def offered_tools(self) -> list[dict[str, Any]]:
        """The tools the model may call; ``tool_choice`` "none" offers none, a named choice only that one."""
        if not self.tools or self.tool_choice == "none":
            return []
        tools = [t.model_dump(exclude_none=True) for t in self.tools]
        if isinstance(self.tool_choice, NamedToolChoice):
            return [t for t in tools if t["function"]["name"] == self.tool_choice.function["name"]]
        return tools

    def must_call(self) -> bool:
        return bool(self.offered_tools()) and self.tool_choice not in (None, "auto")

    def output_schema(self) -> dict[str, Any] | None:
        rf = self.response_format
        if rf is None or rf.type == "text":
            return None
        if rf.type == "json_object":
            return {"type": "object"}
        return (rf.json_schema.schema_ if rf.json_schema else None) or {"type": "object"}

    def model_request(self) -> ModelRequest:
        return ModelRequest(
            messages=[_to_message(m) for m in self.messages],
            stage="openai",
            json_schema=self.output_schema(),
            tools=self.offered_tools(),
            max_tokens=self.max_new_tokens(),
            temperature=self.temperature or 0.0,
        )

    def last_user_text(self) -> str:
        users = [m for m in self.messages if isinstance(m, UserMessage)]
        return _joined((users[-1] if users else self.messages[-1]).content)


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested past the stack: shown as it was sent
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_value": value}


def _to_message(m: AnyMessage) -> Message:
    if isinstance(m, SystemMessage):
        return Message("system", _joined(m.content))
    if isinstance(m, UserMessage):
        return Message("user", _joined(m.content))
    if isinstance(m, ToolMessage):
        return Message("tool", _joined(m.content), tool_call_id=m.tool_call_id)
    text = _joined(m.content) or (m.refusal or "")
    calls = [ToolCall(c.id, c.function.name, _arguments(c.function.arguments)) for c in m.tool_calls or []]
    return Message("assistant", text, calls)


def tool_calls_out(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """The model's calls in OpenAI's shape, each with an id the client sends back with its result."""
    return [
        {
            "id": c.id or f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
        }
        for c in calls
    ]


_ROLES = {"system", "developer", "user", "assistant", "tool"}
_TYPE_LABELS = {"str", "int", "float", "bool", "dict", "list", "none"}


def _param(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as OpenAI names a parameter (``messages[1].content[0].type``): the role
    tag and union-member labels (``str``, ``list[TextPart]``) pydantic puts in the path are left out."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        tag = i >= 2 and loc[i - 2] == "messages" and isinstance(loc[i - 1], int) and part in _ROLES
        label = not re.fullmatch(r"[a-z_][a-z0-9_]*", str(part)) or part in _TYPE_LABELS
        if not (tag or label):
            out += ("." if out else "") + str(part)
    return out


def refusal(err: ValidationError) -> tuple[str | None, str]:
    """The parameter to name and the message to send for an invalid request: of a union's alternatives,
    the one that got furthest (its location is the longest) says best what is wrong."""
    errors = err.errors()
    worst = max(errors, key=lambda e: len(e.get("loc", ())))
    param = _param(tuple(worst.get("loc", ()))) or None
    message = str(worst.get("msg", "invalid request")).removeprefix("Value error, ")
    if worst.get("type") == "extra_forbidden":
        message = "this parameter is not supported here"
    return param, f"{param}: {message}" if param else message
