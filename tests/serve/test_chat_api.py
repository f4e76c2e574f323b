"""The ingress through Ray Serve and real HTTP: SSE order, incremental delivery, load, bad input."""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest

from tests.fakes.slow_pipeline import SlowPipeline
from tests.serve.sse_client import chat

pytestmark = pytest.mark.slow


async def test_stream_has_the_contract_order(client: httpx.AsyncClient) -> None:
    events = await chat(client, "serve-1", "MySQL connection pool exhausted HikariCP diagnosis")
    names = [n for n, _, _ in events]
    assert names == ["metadata", "status", "content", "done"]
    meta = events[0][1]
    assert meta["session_id"] == "serve-1" and meta["run_id"]
    assert events[1][1]["code"] == "ROUTING"
    assert events[2][1]["content_type"] == "CHAT_ANSWER"
    assert events[3][1] == {"outcome": "SUCCESS"}


async def test_events_arrive_as_they_happen(client: httpx.AsyncClient) -> None:
    events = await chat(client, "serve-2", "payment-service 超时, 根因是什么?")
    arrival = [t for _, _, t in events]
    # Each event after metadata is paced by the pipeline; buffered delivery would bunch them at the end.
    gaps = [b - a for a, b in itertools.pairwise(arrival)]
    assert all(g >= SlowPipeline.delay_s * 0.7 for g in gaps), gaps
    assert arrival[-1] - arrival[0] >= 3 * SlowPipeline.delay_s * 0.7


async def test_twenty_concurrent_streams_complete_and_reconcile(client: httpx.AsyncClient) -> None:
    results = await asyncio.gather(*(chat(client, f"load-{i}", f"question {i}") for i in range(20)))
    for events in results:
        assert [n for n, _, _ in events][-1] == "done"
        assert sum(n == "done" for n, _, _ in events) == 1
    for i, events in enumerate(results):
        run_id = events[0][1]["run_id"]
        trace = (await client.get(f"/api/diagnosis/load-{i}/trace", params={"runId": run_id})).json()
        assert trace["run"]["status"] == "SUCCEEDED"
        assert trace["summary"]["complete"] and trace["summary"]["tokens_reconciled"], trace["summary"]


@pytest.mark.parametrize(
    ("kwargs", "status", "code"),
    [
        ({"content": b"not json", "headers": {"content-type": "application/json"}}, 400, "INVALID_JSON"),
        # Nested 5,000 deep in 10 KB: json.loads raised RecursionError, answered 500 with a traceback.
        ({"content": b"[" * 5000 + b"]" * 5000, "headers": {"content-type": "application/json"}}, 400, "INVALID_JSON"),
        (
            {"content": b'{"a":' * 5000 + b"1" + b"}" * 5000, "headers": {"content-type": "application/json"}},
            400,
            "INVALID_JSON",
        ),
        ({"json": {"Id": "s"}}, 422, "INVALID_REQUEST"),
        ({"json": {"Id": "s", "Question": ""}}, 422, "INVALID_REQUEST"),
        ({"json": {"Id": "s", "Question": "x" * 8001}}, 422, "INVALID_REQUEST"),
        ({"json": ["Id", "Question"]}, 422, "INVALID_REQUEST"),
        ({"content": b"Id=s&Question=q", "headers": {"content-type": "text/plain"}}, 415, "UNSUPPORTED_MEDIA_TYPE"),
        ({"content": b"{" + b" " * 70000 + b"}", "headers": {"content-type": "application/json"}}, 413, None),
    ],
)
async def test_bad_chat_input_gets_a_clear_json_error(
    client: httpx.AsyncClient, kwargs: dict, status: int, code: str | None
) -> None:
    resp = await client.post("/api/chat", **kwargs)
    assert resp.status_code == status
    body = resp.json()
    assert set(body["error"]) == {"code", "message", "type", "param"} and body["error"]["message"]
    if code:
        assert body["error"]["code"] == code


async def test_unknown_path_and_method(client: httpx.AsyncClient) -> None:
    resp = await client.get("/api/nothing-here")
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "NOT_FOUND"
    resp = await client.get("/api/chat")
    assert resp.status_code == 405 and resp.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


async def test_healthz_reports_components(client: httpx.AsyncClient) -> None:
    body = (await client.get("/healthz")).json()
    assert body["status"] == "ok"
    assert body["components"]["ingress"]["state"] == "ok"
    assert body["components"]["audit"]["state"] == "ok" and body["components"]["audit"]["dialect"] == "sqlite"
    # every deployment a chat needs answered its probe
    assert {body["components"][n]["state"] for n in ("llm", "embedder", "search")} == {"ok"}
    assert body["components"]["search"]["packs"] == ["runbooks"]
    assert body["components"]["search"]["chunks"] > 0 and body["components"]["embedder"]["dim"] == 512
    assert (await client.get("/livez")).json() == {"status": "alive"}


async def test_trace_reasoning_runs_and_feedback(client: httpx.AsyncClient) -> None:
    first = await chat(client, "trace-1", "first question")
    second = await chat(client, "trace-1", "second question")
    other = await chat(client, "trace-2", "another session")
    run1, run2 = first[0][1]["run_id"], second[0][1]["run_id"]

    trace = (await client.get("/api/diagnosis/trace-1/trace", params={"runId": run1})).json()
    assert trace["run"]["query"] == "first question"
    types = [e["event_type"] for e in trace["timeline"]]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    latest = (await client.get("/api/diagnosis/trace-1/trace")).json()
    assert latest["run"]["run_id"] == run2
    cross = await client.get("/api/diagnosis/trace-1/trace", params={"runId": other[0][1]["run_id"]})
    assert cross.status_code == 404 and cross.json()["error"]["code"] == "NOT_FOUND"
    assert (await client.get("/api/diagnosis/trace-1/trace/reasoning", params={"runId": run1})).status_code == 200
    runs = (await client.get("/api/diagnosis/trace-1/runs")).json()["runs"]
    assert [r["run_id"] for r in runs] == [run2, run1]

    fb = await client.post("/api/diagnosis/trace-1/feedback", json={"runId": run1, "rating": "up", "comment": "ok"})
    assert fb.status_code == 202
    trace = (await client.get("/api/diagnosis/trace-1/trace", params={"runId": run1})).json()
    assert trace["run"]["feedback"]["rating"] == "up"
    missing = await client.post("/api/diagnosis/trace-1/feedback", json={"runId": "nope", "rating": "up"})
    assert missing.status_code == 404
    invalid = await client.post("/api/diagnosis/trace-1/feedback", json={"runId": run1, "rating": "meh"})
    assert invalid.status_code == 422


async def test_bad_ids_in_trace_paths_are_rejected(client: httpx.AsyncClient) -> None:
    for url in ("/api/diagnosis/bad%20id/trace", "/api/diagnosis/ok/trace?runId=x%27%20or%201%3D1"):
        resp = await client.get(url)
        assert resp.status_code == 422 and resp.json()["error"]["code"] == "INVALID_REQUEST"


async def test_openapi_describes_the_api(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    assert "/api/chat" in spec["paths"] and "/api/diagnosis/{sessionId}/trace" in spec["paths"]
    ref = spec["paths"]["/api/chat"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = spec["components"]["schemas"][ref.rsplit("/", 1)[1]]  # the component it names, through the proxy
    assert set(body["required"]) == {"Id", "Question"}
