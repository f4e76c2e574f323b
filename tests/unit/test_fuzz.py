"""Property-based tests (hypothesis) of the request models, the SSE framing and the HTTP API, and a
schemathesis run over the OpenAPI description of /api/*: bad input is a clear 4xx, never a 5xx."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from deployments.config import AlertSettings
from deployments.http_api import create_api
from deployments.sse import frame, parse
from harness.contracts import ChatRequest, DoneEvent, MetadataEvent, SseEvent
from tests.unit.test_auth import TenantAudit

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.sampled_from(["Id", "Question", "extra", "id"]), JSONISH, max_size=4))
def test_chat_request_accepts_or_rejects_cleanly(body: dict[str, Any]) -> None:
    try:
        req = ChatRequest.model_validate(body)
    except ValidationError:
        return
    assert req.Question.strip() and 1 <= len(req.Id) <= 64


@given(
    st.text(min_size=1).filter(lambda s: not any(c in s for c in "\r\n:")),
    st.dictionaries(st.text(), st.text() | st.integers() | st.lists(st.text(), max_size=3), max_size=5),
    st.none() | st.integers(min_value=0, max_value=10**9),
)
def test_sse_frames_round_trip_whatever_the_text(name: str, data: dict[str, Any], event_id: int | None) -> None:
    raw = frame(name, data, event_id)
    text = raw.decode("utf-8")
    assert text.endswith("\n\n") and text.count("\n\n") == 1  # one event, never split by its content
    assert parse(text + text) == [(name, data), (name, data)]


@given(st.tuples(st.text(), st.sampled_from(["\r", "\n", ":"]), st.text()).map("".join))
def test_sse_rejects_event_names_that_would_break_framing(name: str) -> None:
    with pytest.raises(ValueError):
        frame(name, {})


def _app() -> Any:
    async def run_chat(req: ChatRequest, tenant: str | None, options: Any = None) -> AsyncGenerator[SseEvent, None]:
        yield MetadataEvent(session_id=req.Id, run_id="r1")
        yield DoneEvent(outcome="SUCCESS")

    async def flush() -> bool:
        return True

    # /api/alerts too: a generated Alertmanager payload must never get a 5xx either.
    return create_api(run_chat, TenantAudit(), lambda r: None, flush, 4096, alerts=AlertSettings())


APP = _app()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.binary(max_size=6000),
        JSONISH.map(lambda v: json.dumps(v).encode()),
        st.fixed_dictionaries({"Id": st.text(max_size=80), "Question": st.text(max_size=50)}).map(
            lambda v: json.dumps(v).encode()
        ),
    ),
    st.sampled_from(["application/json", "text/plain", "application/json; charset=utf-8", ""]),
)
def test_chat_never_answers_5xx(body: bytes, content_type: str) -> None:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=APP), base_url="http://t") as c:
            headers = {"Content-Type": content_type} if content_type else {}
            return await c.post("/api/chat", content=body, headers=headers)

    r = asyncio.run(go())
    assert r.status_code in {200, 400, 413, 415, 422}, r.text
    if r.status_code == 200:
        assert r.text.count("event: done") == 1
    else:
        assert set(r.json()["error"]) == {"code", "message", "type", "param"}


@given(st.text(max_size=100), st.text(max_size=80) | st.none())
@settings(max_examples=100, deadline=None)
def test_trace_routes_never_answer_5xx(session: str, run: str | None) -> None:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=APP), base_url="http://t") as c:
            params = {"runId": run} if run is not None else {}
            return await c.get(f"/api/diagnosis/{quote(session or 'x', safe='')}/trace", params=params)

    r = asyncio.run(go())
    assert r.status_code < 500, r.text
