"""Bring your own model: the harness's ``ChatModel`` over any OpenAI-compatible endpoint
(``llm.backend: openai``): a team's own vLLM cluster, or a hosted API such as DeepSeek's.

The request is the one the embedded engine gets (tools described in the system prompt, tool turns as
user turns: ``harness/json_tools.py``), so any chat model works. A stage's JSON schema goes out as
``response_format: json_schema`` where the server constrains decoding with it; for servers that do
not, ``llm.structured_output: prompt`` puts the schema in the system prompt instead and the harness's
guard checks what comes back. The API key is read from ``RAYDIAG_LLM_API_KEY`` when the model is
built and lives only in the HTTP client's headers: it is never part of the config, an error message, a
log line or the audit trail.
"""

from __future__ import annotations

import json
import os
from typing import Any, Literal

import httpx

from harness.json_tools import flatten_messages, guided_schema, parse_reply, split_reasoning
from harness.model import ModelError, ModelRequest, ModelResponse
from harness.recorder import Usage

API_KEY_ENV = "RAYDIAG_LLM_API_KEY"
StructuredOutput = Literal["json_schema", "prompt"]
SCHEMA_IN_PROMPT = "\n\nAnswer with one JSON object, and nothing else, that matches this JSON schema:\n{schema}"


def _error_text(resp: httpx.Response) -> str:
    """The server's own error message, short (OpenAI's shape: {"error": {"message": ...}})."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:300]
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return str(err.get("message") or err.get("code") or "")[:300]
    return str(err or body)[:300]


class OpenAIEndpointModel:
    """``ChatModel`` over ``POST {base_url}/chat/completions``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        structured_output: StructuredOutput = "json_schema",
        timeout_s: float = 120.0,
        api_key: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.structured_output = structured_output
        self.timeout_s = timeout_s
        key = os.environ.get(API_KEY_ENV, "") if api_key is None else api_key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.AsyncClient(base_url=self.base_url, headers=headers, transport=transport)

    def __repr__(self) -> str:  # never the headers
        return f"OpenAIEndpointModel({self.base_url!r}, {self.model!r})"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        messages = flatten_messages(request)
        schema = guided_schema(request)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if schema is None:
            return body
        if self.structured_output == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": f"{request.stage}_answer", "schema": schema},
            }
        else:
            text = SCHEMA_IN_PROMPT.format(schema=json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
            if messages and messages[0]["role"] == "system":
                messages[0] = {"role": "system", "content": messages[0]["content"] + text}
            else:
                messages.insert(0, {"role": "system", "content": text.strip()})
        return body

    async def complete(self, request: ModelRequest) -> ModelResponse:
        timeout = min(request.timeout_s, self.timeout_s)
        try:
            resp = await self._client.post("/chat/completions", json=self.body(request), timeout=timeout)
        except httpx.TimeoutException as err:
            raise ModelError("TIMEOUT", f"{self.base_url} gave no answer in {timeout:.0f}s") from err
        except httpx.HTTPError as err:
            raise ModelError("UNAVAILABLE", f"{self.base_url} is unreachable: {type(err).__name__}") from err
        if resp.status_code in (401, 403):
            raise ModelError(
                "UNAUTHORIZED", f"{self.base_url} refused the API key (HTTP {resp.status_code}); check {API_KEY_ENV}"
            )
        if resp.status_code == 400:
            message = _error_text(resp)
            code = (
                "CONTEXT_TOO_LONG"
                if "context" in message.lower() or "too long" in message.lower()
                else "INVALID_REQUEST"
            )
            raise ModelError(code, f"{self.base_url}: {message}")
        if resp.status_code != 200:
            raise ModelError("UNAVAILABLE", f"{self.base_url} answered HTTP {resp.status_code}: {_error_text(resp)}")
        try:
            data = resp.json()
            choice = data["choices"][0]
            message = choice["message"]
        except (ValueError, KeyError, IndexError, TypeError) as err:
            raise ModelError(
                "ENGINE_ERROR", f"{self.base_url} answered something that is not a chat completion"
            ) from err
        text, thought = split_reasoning(message.get("content") or "")
        reasoning = message.get("reasoning_content") or message.get("reasoning") or thought
        usage_body = data.get("usage") or {}
        usage = Usage(int(usage_body.get("prompt_tokens") or 0), int(usage_body.get("completion_tokens") or 0))
        response = ModelResponse(
            text=text, reasoning=reasoning, finish_reason=choice.get("finish_reason") or "stop", usage=usage
        )
        return parse_reply(text, response, request)

    async def aclose(self) -> None:
        await self._client.aclose()
