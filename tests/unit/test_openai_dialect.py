"""/v1 speaks the dialect agent frameworks send: the official ``openai`` client and LangChain's
``ChatOpenAI`` / ``OpenAIEmbeddings`` against the routes as the ingress builds them (create_api, then
the OpenAI routes), the LLM and embedder deployments' handles scripted stand-ins. What the model was
asked is compared with what the client sent; refusals are OpenAI's 400 with the parameter named."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import numpy as np
import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from starlette.requests import ClientDisconnect

from deployments.http_api import create_api
from deployments.limits import RunLimiter
from deployments.openai_api import add_openai_routes
from harness.json_tools import tool_call_schema
from tests.fakes.serve_handles import FakeEmbedderHandle, ScriptedLLMHandle
from tests.fakes.sinks import ListSink

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
CALL_REPLY = json.dumps({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]})


def _app(llm: ScriptedLLMHandle) -> Any:
    async def run_chat(req: Any, tenant: str | None) -> Any:  # pragma: no cover - not called
        yield None

    async def flush() -> bool:
        return True

    app = create_api(run_chat, None, lambda r: None, flush, 65536)  # type: ignore[arg-type]
    add_openai_routes(app, llm, embedder=FakeEmbedderHandle(), limiter=RunLimiter(4, 2), sink=ListSink())  # type: ignore[arg-type]
    return app


def _http(llm: ScriptedLLMHandle) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=_app(llm)), base_url="http://t/v1")


def _client(llm: ScriptedLLMHandle) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url="http://t/v1", api_key="unused", http_client=_http(llm), max_retries=0)


async def test_framework_messages_reach_the_model_as_harness_turns() -> None:
    llm = ScriptedLLMHandle("It is sunny in Paris.")
    done = await _client(llm).chat.completions.create(
        model="tiny",
        messages=[
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather"}, {"type": "text", "text": "in Paris?"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21C"},
        ],
        max_completion_tokens=40,
        temperature=0.3,
        top_p=0.9,
        stop=["\n\n"],
        seed=7,
        presence_penalty=0.5,
    )
    assert done.choices[0].message.content == "It is sunny in Paris." and done.choices[0].finish_reason == "stop"
    messages, max_tokens, sampling, schema = llm.calls[0]
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather\nin Paris?"},
        {
            "role": "assistant",
            "content": json.dumps(
                {"tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]}
            ),
        },
        {"role": "user", "content": "Tool result for call call_1:\nsunny, 21C"},
    ]
    assert max_tokens == 40 and schema is None
    assert sampling == {"temperature": 0.3, "top_p": 0.9, "stop": ["\n\n"], "seed": 7, "presence_penalty": 0.5}


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"n": 2}, "n"),
        ({"logit_bias": {"50256": -100}}, "logit_bias"),
        ({"logprobs": True}, "logprobs"),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/a.png"}}]}
                ]
            },
            "messages[0].content",
        ),
        ({"messages": [{"role": "function", "name": "f", "content": "x"}]}, "messages[0]"),
        ({"tool_choice": {"type": "function", "function": {"name": "nope"}}, "tools": [WEATHER]}, None),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ],
)
async def test_what_cannot_be_honoured_is_refused_by_name(extra: dict[str, Any], param: str | None) -> None:
    llm = ScriptedLLMHandle()
    body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], **extra}
    with pytest.raises(openai.BadRequestError) as refused:
        await _client(llm).chat.completions.create(**body)
    err = refused.value.body
    assert refused.value.status_code == 400 and isinstance(err, dict)
    assert err["type"] == "invalid_request_error" and err["param"] == param and err["code"] == "INVALID_REQUEST"
    assert llm.calls == []  # nothing reached the model


async def test_an_unknown_model_is_a_404() -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        await _client(ScriptedLLMHandle()).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        )
    assert missing.value.code == "model_not_found" and missing.value.param == "model"  # type: ignore[attr-defined]


async def test_parallel_tool_calls_false_allows_one_call() -> None:
    """The client asked for no parallel calls: decoding is constrained to one, and a reply with two (an
    engine that ignored the schema) comes back with its first only; asked nothing, both come back."""
    two = json.dumps({"tool_calls": [{"name": "get_weather", "arguments": {"city": c}} for c in ("Paris", "Lyon")]})
    llm = ScriptedLLMHandle(two)
    client = _client(llm)
    ask = {"model": "tiny", "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [WEATHER]}
    one = await client.chat.completions.create(**ask, tool_choice="required", parallel_tool_calls=False)  # type: ignore[call-overload]
    assert llm.calls[0][3] == tool_call_schema([WEATHER], 1)
    assert [json.loads(c.function.arguments)["city"] for c in one.choices[0].message.tool_calls or []] == ["Paris"]  # type: ignore[union-attr]
    both = await client.chat.completions.create(**ask, tool_choice="required")  # type: ignore[call-overload]
    assert llm.calls[1][3] == tool_call_schema([WEATHER])
    assert len(both.choices[0].message.tool_calls or []) == 2


async def test_a_tool_call_comes_back_in_openai_shape_stream_or_not() -> None:
    llm = ScriptedLLMHandle(CALL_REPLY)
    client = _client(llm)
    done = await client.chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],
        tool_choice="required",
    )
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]
    assert call.id.startswith("call_")
    assert llm.calls[0][3] == tool_call_schema([WEATHER])  # "required": decoding is constrained to a call
    assert "get_weather: The weather in a city" in llm.calls[0][0][0]["content"]  # offered in the system turn

    stream = await client.chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [c async for c in stream]
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    (streamed,) = [t for d in deltas for t in d.tool_calls or []]
    assert streamed.function and streamed.function.name == "get_weather" and streamed.index == 0
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage and chunks[-1].usage.total_tokens == 7
    assert llm.calls[1][3] is None  # "auto": free text or a call, parsed either way


async def test_usage_streams_only_when_asked() -> None:
    client = _client(ScriptedLLMHandle("hello there"))
    plain = [
        c
        async for c in await client.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    ]
    assert "".join(c.choices[0].delta.content or "" for c in plain if c.choices) == "hello there"
    assert all(c.usage is None for c in plain)


async def test_langchain_chat_openai_with_history_and_bound_tools() -> None:
    llm = ScriptedLLMHandle("Sunny.")
    chat = ChatOpenAI(
        model="tiny", base_url="http://t/v1", api_key="unused", http_async_client=_http(llm), max_retries=0
    )  # type: ignore[arg-type]
    reply = await chat.ainvoke(
        [
            SystemMessage("Be brief."),
            HumanMessage("Weather in Paris?"),
            AIMessage("", tool_calls=[{"id": "call_9", "name": "get_weather", "args": {"city": "Paris"}}]),
            ToolMessage("sunny", tool_call_id="call_9"),
        ]
    )
    assert reply.content == "Sunny."
    assert llm.calls[0][0][-1] == {"role": "user", "content": "Tool result for call call_9:\nsunny"}

    llm.reply = CALL_REPLY
    bound = chat.bind_tools([WEATHER], tool_choice="get_weather")
    called = await bound.ainvoke("Weather in Paris?")
    assert [(c["name"], c["args"]) for c in called.tool_calls] == [("get_weather", {"city": "Paris"})]  # type: ignore[attr-defined]
    assert llm.calls[1][3] == tool_call_schema([WEATHER])


async def test_embeddings_through_both_clients() -> None:
    llm = ScriptedLLMHandle()
    client = _client(llm)
    got = await client.embeddings.create(model="usem3", input=["disk full on /var", "磁盘满了"])  # base64 by default
    assert [len(d.embedding) for d in got.data] == [4, 4] and got.model == "usem3"
    np.testing.assert_allclose(got.data[1].embedding, [4.0, 1.0, 0.5, -0.25])
    assert got.usage.prompt_tokens == 5  # the embedder's count: four words and one
    floats = await client.embeddings.create(model="usem3", input="x", encoding_format="float")
    assert floats.data[0].embedding == [1.0, 1.0, 0.5, -0.25]
    lc = OpenAIEmbeddings(
        model="usem3",
        base_url="http://t/v1",
        api_key="unused",
        http_async_client=_http(llm),
        check_embedding_ctx_length=False,  # type: ignore[arg-type]
    )
    assert (await lc.aembed_query("abc"))[:2] == [3.0, 1.0]
    with pytest.raises(openai.BadRequestError) as refused:
        await client.embeddings.create(model="usem3", input=[[1, 2, 3]])
    assert refused.value.body["param"] == "input"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as wrong_dim:
        await client.embeddings.create(model="usem3", input="x", dimensions=256)
    assert wrong_dim.value.body["param"] == "dimensions"  # type: ignore[index]
    with pytest.raises(openai.NotFoundError):
        await client.embeddings.create(model="text-embedding-3-small", input="x")
    listed = await client.models.list()
    assert [m.id for m in listed.data] == ["tiny", "usem3"]


async def test_what_cannot_be_rendered_or_parsed_is_never_a_500() -> None:
    """Tool-call arguments nested past the stack reach the model as the text they were; a reply nested
    past the stack is text, not a call; /v1/models answers 503 while the engine does not."""
    deep = "[" * 5000 + "]" * 5000
    llm = ScriptedLLMHandle("{" * 3000 + "}" * 3000)
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": deep}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    async with _http(llm) as c:
        r = await c.post("/chat/completions", json={"model": "tiny", "messages": history, "tools": [WEATHER]})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"].startswith("{{{")
    assert '"_raw": "[[[' in llm.calls[0][0][2]["content"]

    class Down(ScriptedLLMHandle):
        async def _models(self) -> list[str]:
            raise ConnectionError("no replica")

    async with _http(Down()) as c:
        down = await c.get("/models")
    assert down.status_code == 503 and down.json()["error"]["code"] == "UNAVAILABLE"


async def test_a_stream_whose_headers_never_reach_the_client_frees_its_slot_and_ends_its_run() -> None:
    """The client is gone before the response starts (sending the headers fails): the body generator
    never runs, yet the admission slot is released and the audited run finished, once."""
    sink, limiter = ListSink(), RunLimiter(4, 2)
    app = create_api(lambda *_: None, None, lambda r: None, lambda: None, 65536)  # type: ignore[arg-type]
    add_openai_routes(app, ScriptedLLMHandle("hello"), limiter=limiter, sink=sink)  # type: ignore[arg-type]
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("t", 80),
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        raise OSError("the client is gone")

    with pytest.raises(ClientDisconnect):  # what Starlette makes of the failed send
        await app(scope, receive, send)
    assert limiter.in_flight() == 0
    finished = [r.data for r in sink.records if r.kind == "run_finished"]
    assert [(f["status"], f["error_code"]) for f in finished] == [("FAILED", "CLIENT_DISCONNECTED")]
