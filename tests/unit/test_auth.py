"""API keys and tenants at the HTTP layer: 401 without a valid key, the tenant reaches the pipeline
and the trace reader, another tenant's session is a 404, keys never leak."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import pytest

from deployments.auth import parse_keys, tenant_for
from deployments.config import ConfigError, parse_config
from deployments.http_api import create_api
from harness.contracts import ChatRequest, DoneEvent, MetadataEvent, SseEvent

KEYS = {"team-a": "key-aaaa-1111", "team-b": "key-bbbb-2222"}
OWNER = {"sess-a": "team-a"}  # session -> tenant, as the audit trail records it


class TenantAudit:
    """The audit backend's contract as a neighbour: a session is visible only to its tenant."""

    async def trace(self, session_id: str, run_id: str | None, tenant_id: str | None) -> dict[str, Any]:
        if OWNER.get(session_id) and (tenant_id is None or OWNER[session_id] == tenant_id):
            return {"ok": True, "value": {"run": {"session_id": session_id}}}
        return {"ok": False, "error": f"no run in session {session_id}"}

    reasoning = trace

    async def runs(self, session_id: str, tenant_id: str | None) -> dict[str, Any]:
        ok = OWNER.get(session_id) == tenant_id
        return {"ok": True, "value": [{"run_id": "r1"}] if ok else []}

    async def run_exists(self, session_id: str, run_id: str, tenant_id: str | None) -> bool:
        return OWNER.get(session_id) == tenant_id

    async def health(self) -> dict[str, Any]:
        return {"state": "ok"}


def make_client(keys: dict[str, str] | None) -> tuple[httpx.AsyncClient, list[str | None]]:
    tenants: list[str | None] = []

    async def run_chat(req: ChatRequest, tenant: str | None) -> AsyncGenerator[SseEvent, None]:
        tenants.append(tenant)
        yield MetadataEvent(session_id=req.Id, run_id="r1")
        yield DoneEvent(outcome="SUCCESS")

    async def flush() -> bool:
        return True

    app = create_api(run_chat, TenantAudit(), lambda r: None, flush, 65536, api_keys=keys)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t"), tenants


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


CHAT = {"Id": "sess-a", "Question": "why?"}


async def test_without_keys_everything_is_open() -> None:
    client, tenants = make_client(None)
    async with client:
        r = await client.post("/api/chat", json=CHAT)
        assert r.status_code == 200 and "event: done" in r.text and tenants == [None]


async def test_keys_are_required_on_api_routes_only(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client, tenants = make_client(KEYS)
    async with client:
        for headers in ({}, auth("wrong-key-0000"), {"Authorization": "Basic " + KEYS["team-a"]}):
            r = await client.post("/api/chat", json=CHAT, headers=headers)
            assert r.status_code == 401 and r.json()["error"]["code"] == "UNAUTHORIZED"
            assert r.headers["www-authenticate"].startswith("Bearer")
        assert (await client.get("/v1/models")).status_code == 401
        assert (await client.get("/api/diagnosis/sess-a/runs")).status_code == 401
        assert (await client.get("/healthz")).status_code == 200  # stays open
        assert (await client.get("/")).status_code == 200  # the console page asks for the key itself
        r = await client.post("/api/chat", json=CHAT, headers=auth(KEYS["team-a"]))
        assert r.status_code == 200 and "event: done" in r.text
        assert tenants == ["team-a"]
    assert all(k not in caplog.text for k in KEYS.values())


async def test_a_tenant_sees_only_its_own_sessions() -> None:
    client, _ = make_client(KEYS)
    async with client:
        own = await client.get("/api/diagnosis/sess-a/trace", headers=auth(KEYS["team-a"]))
        assert own.status_code == 200
        other = await client.get("/api/diagnosis/sess-a/trace", headers=auth(KEYS["team-b"]))
        assert other.status_code == 404 and KEYS["team-b"] not in other.text
        assert (await client.get("/api/diagnosis/sess-a/runs", headers=auth(KEYS["team-b"]))).json()["runs"] == []
        fb = {"runId": "r1", "rating": "up"}
        assert (
            await client.post("/api/diagnosis/sess-a/feedback", json=fb, headers=auth(KEYS["team-b"]))
        ).status_code == 404
        assert (
            await client.post("/api/diagnosis/sess-a/feedback", json=fb, headers=auth(KEYS["team-a"]))
        ).status_code == 202


def test_key_matching_and_parsing() -> None:
    assert tenant_for("Bearer key-bbbb-2222", KEYS) == "team-b"
    assert tenant_for("Bearer key-bbbb-222", KEYS) is None  # a prefix is not a key
    assert tenant_for(None, KEYS) is None and tenant_for("key-aaaa-1111", KEYS) is None
    assert parse_keys(" a:12345678 , b:abcdefgh ") == {"a": "12345678", "b": "abcdefgh"}
    for bad in ("a", "a:short", ":12345678"):
        with pytest.raises(ValueError):
            parse_keys(bad)


def test_check_config_masks_keys(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.main import main

    monkeypatch.setenv("RAYDIAG_API_KEYS", "team-a:key-aaaa-1111")
    assert main(["check-config"]) == 0
    out = capsys.readouterr().out
    assert '"team-a": "***"' in out and "key-aaaa-1111" not in out


def test_env_keys_reach_the_config_and_bad_ones_fail_without_echo() -> None:
    cfg = parse_config({}, "t", env={"RAYDIAG_API_KEYS": "team-a:key-aaaa-1111"})
    assert cfg.auth.api_keys == {"team-a": "key-aaaa-1111"}
    with pytest.raises(ConfigError) as err:
        parse_config({}, "t", env={"RAYDIAG_API_KEYS": "team-a:tiny"})
    assert "tiny" not in str(err.value)
