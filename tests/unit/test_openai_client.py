"""The bring-your-own-endpoint model: what it sends, how it reads replies, and that the API key goes
only into the Authorization header. The endpoint here is an httpx mock transport (the neighbour); the
same client against a real OpenAI-compatible server is tests/serve/test_openai_backend.py."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from deployments.config import ConfigError, parse_config
from deployments.openai_client import OpenAIEndpointModel
from harness.model import Message, ModelError, ModelRequest

KEY = "sk-test-0123456789abcdef"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
TOOLS = [{"type": "function", "function": {"name": "query_logs", "description": "logs", "parameters": {}}}]


def _model(handler: Any, structured: str = "json_schema") -> tuple[OpenAIEndpointModel, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    model = OpenAIEndpointModel(
        "http://127.0.0.1:9/v1/",
        "m",
        structured,
        api_key=KEY,
        transport=httpx.MockTransport(record),  # type: ignore[arg-type]
    )
    return model, seen


def _reply(content: str, **message: Any) -> httpx.Response:
    body = {
        "choices": [{"message": {"role": "assistant", "content": content, **message}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3},
    }
    return httpx.Response(200, json=body)


def _req(**kw: Any) -> ModelRequest:
    return ModelRequest([Message("system", "Be terse."), Message("user", "Is it up?")], stage="verifier", **kw)


async def test_schema_goes_out_as_response_format_and_the_key_as_bearer() -> None:
    model, seen = _model(lambda r: _reply('{"ok": true}'))
    resp = await model.complete(_req(json_schema=SCHEMA, max_tokens=32))
    assert json.loads(resp.text) == {"ok": True} and resp.usage is not None and resp.usage.total_tokens == 14
    sent = json.loads(seen[0].content)
    assert str(seen[0].url) == "http://127.0.0.1:9/v1/chat/completions"
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA and sent["max_tokens"] == 32
    assert sent["model"] == "m" and sent["messages"][0] == {"role": "system", "content": "Be terse."}
    assert KEY not in repr(model)


async def test_prompt_mode_puts_the_schema_in_the_system_prompt() -> None:
    model, seen = _model(lambda r: _reply('{"ok": false}'), structured="prompt")
    await model.complete(_req(json_schema=SCHEMA))
    sent = json.loads(seen[0].content)
    assert "response_format" not in sent
    assert (
        sent["messages"][0]["content"].startswith("Be terse.") and '"required":["ok"]' in sent["messages"][0]["content"]
    )


async def test_a_tool_call_reply_becomes_tool_calls_and_reasoning_is_kept_apart() -> None:
    call = json.dumps({"tool_calls": [{"name": "query_logs", "arguments": {"service": "db"}}]})
    model, seen = _model(lambda r: _reply(call, reasoning_content="look at the logs"))
    resp = await model.complete(_req(tools=TOOLS, json_schema=SCHEMA))
    assert [(c.name, c.arguments) for c in resp.tool_calls] == [("query_logs", {"service": "db"})]
    assert resp.reasoning == "look at the logs" and resp.finish_reason == "tool_calls"
    schema = json.loads(seen[0].content)["response_format"]["json_schema"]["schema"]
    assert len(schema["anyOf"]) == 2  # a tool call or the answer
    inline, _ = _model(lambda r: _reply("<think>hmm</think>plain answer"))
    resp = await inline.complete(_req())
    assert (resp.text, resp.reasoning) == ("plain answer", "hmm")


@pytest.mark.parametrize(
    ("response", "code"),
    [
        (httpx.Response(401, json={"error": {"message": "bad key"}}), "UNAUTHORIZED"),
        (httpx.Response(400, json={"error": {"message": "maximum context length is 4096 tokens"}}), "CONTEXT_TOO_LONG"),
        (httpx.Response(400, json={"error": {"message": "unknown field"}}), "INVALID_REQUEST"),
        (httpx.Response(503, text="overloaded"), "UNAVAILABLE"),
        (httpx.Response(200, json={"id": "x"}), "ENGINE_ERROR"),
    ],
)
async def test_endpoint_errors_are_typed_and_never_carry_the_key(response: httpx.Response, code: str) -> None:
    model, _ = _model(lambda r: response)
    with pytest.raises(ModelError) as err:
        await model.complete(_req())
    assert err.value.code == code and KEY not in str(err.value)


async def test_unreachable_and_slow_endpoints() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    for handler, code in ((refuse, "UNAVAILABLE"), (slow, "TIMEOUT")):
        model, _ = _model(handler)
        with pytest.raises(ModelError) as err:
            await model.complete(_req())
        assert err.value.code == code and KEY not in str(err.value)


def test_openai_backend_needs_a_url_without_credentials() -> None:
    with pytest.raises(ConfigError, match=r"needs llm\.base_url"):
        parse_config({"llm": {"backend": "openai"}}, "t", env={})
    with pytest.raises(ConfigError, match="must not carry credentials"):
        parse_config({"llm": {"backend": "openai", "base_url": "https://u:p@api.example.com/v1"}}, "t", env={})
    cfg = parse_config({"llm": {"backend": "openai", "base_url": "https://api.deepseek.com/v1"}}, "t", env={})
    assert cfg.llm.structured_output == "json_schema"
