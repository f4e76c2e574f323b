"""``llm.backend: openai`` against a real OpenAI-compatible server on 127.0.0.1.

The server is the project's own ``/v1`` routes over the session's vLLM engine (SmolLM2-135M), behind
API-key authentication, as one more Serve application. Not vLLM's own ``vllm serve``: that would load
a second engine next to the session's on two cores while this one already speaks the protocol the
official ``openai`` client accepts (test_llm.py). A second ingress with ``llm.backend: openai`` calls
it over HTTP with the key from ``RAYDIAG_LLM_API_KEY``; the key must never reach the audit trail."""

from __future__ import annotations

import json
import sqlite3
import tempfile
import uuid

import httpx
import pytest

from deployments.openai_client import API_KEY_ENV, OpenAIEndpointModel
from deployments.sse import parse
from harness.model import Message, ModelError, ModelRequest
from tests.serve.conftest import TEST_MODEL, extra_ingress

pytestmark = pytest.mark.slow

ENDPOINT_KEY = "sk-endpoint-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def endpoint(serve_app: dict[str, str]) -> str:
    """The /v1 routes of an ingress over the session's engine, with authentication on."""
    from ray import serve

    from deployments.config import parse_config

    cfg = parse_config(
        {
            "llm": {"backend": "vllm", "model": TEST_MODEL},
            "auth": {"api_keys": {"model-team": ENDPOINT_KEY}},
            "audit": {"db_url": serve_app["db_url"], "spill_path": tempfile.mktemp(prefix="raydiag-spill-")},
        },
        "openai-endpoint-test",
        env={},
    )
    serve.run(extra_ingress("ingress-endpoint", cfg, llm=("llm", "raydiag")), name="endpoint", route_prefix="/endpoint")
    return serve_app["base"] + "/endpoint/v1"


@pytest.fixture(scope="module")
def byom_app(serve_app: dict[str, str], endpoint: str) -> str:
    """An ingress whose model is the endpoint above, reached over HTTP (llm.backend: openai)."""
    from ray import serve

    from deployments.config import parse_config

    cfg = parse_config(
        {
            "llm": {"backend": "openai", "base_url": endpoint, "model": TEST_MODEL},
            "audit": {"db_url": serve_app["db_url"], "spill_path": tempfile.mktemp(prefix="raydiag-spill-")},
        },
        "byom-test",
        env={},
    )
    # The key reaches the replica through its environment, as on a cluster node; never through the config.
    options = {"ray_actor_options": {"num_cpus": 0, "runtime_env": {"env_vars": {API_KEY_ENV: ENDPOINT_KEY}}}}
    serve.run(extra_ingress("ingress-byom", cfg, **options), name="byom", route_prefix="/byom")
    return serve_app["base"] + "/byom"


async def test_the_client_speaks_to_a_real_endpoint_with_its_key(endpoint: str) -> None:
    schema = {"type": "object", "properties": {"up": {"type": "boolean"}}, "required": ["up"]}
    request = ModelRequest(
        [Message("system", "Answer as JSON."), Message("user", "Is the database up?")],
        stage="verifier",
        json_schema=schema,
        max_tokens=24,
    )
    model = OpenAIEndpointModel(endpoint, TEST_MODEL, api_key=ENDPOINT_KEY)
    resp = await model.complete(request)
    assert isinstance(json.loads(resp.text)["up"], bool)  # decoded under the schema by the real engine
    assert resp.usage is not None and resp.usage.input_tokens > 0 and resp.usage.output_tokens > 0
    wrong = OpenAIEndpointModel(endpoint, TEST_MODEL, api_key="sk-wrong")
    with pytest.raises(ModelError) as err:
        await wrong.complete(request)
    assert err.value.code == "UNAUTHORIZED"
    await model.aclose()
    await wrong.aclose()


async def test_a_chat_run_through_the_openai_backend_is_audited_without_the_key(
    serve_app: dict[str, str], byom_app: str
) -> None:
    session = "byom-" + uuid.uuid4().hex[:8]
    async with httpx.AsyncClient(base_url=byom_app, timeout=300) as c:
        resp = await c.post("/api/chat", json={"Id": session, "Question": "你好，你能做什么？"})
        events = parse(resp.text)
        trace = (await c.get(f"/api/diagnosis/{session}/trace")).json()
    names = [name for name, _ in events]
    assert names[-1] == "done" and dict(events)["done"]["outcome"] == "SUCCESS", events
    content = dict(events)["content"]
    assert content["content_type"] == "CHAT_ANSWER" and content["payload"]["text"].strip()
    # One model call went over HTTP to the endpoint, and its tokens were audited and reconcile.
    assert trace["run"]["model_call_count"] == 1 and trace["run"]["total_token_count"] > 0
    assert trace["summary"]["tokens_reconciled"]
    db_path = serve_app["db_url"].removeprefix("sqlite:///")
    with sqlite3.connect(db_path) as conn:
        dump = "\n".join(conn.iterdump())
    assert session in dump and ENDPOINT_KEY not in dump
