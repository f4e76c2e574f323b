"""Fault injection through Ray: the search deployment goes away under a running ingress. Every run
still ends with exactly one `done` (a SAFE_FALLBACK for want of evidence), and every run's audit trail
is complete — each event persisted once, none missing."""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

import httpx
import pytest
from ray import serve

from deployments.config import parse_config
from deployments.ingress import Ingress
from deployments.search import SearchDeployment
from deployments.sse import parse

pytestmark = pytest.mark.slow


async def _chat(client: httpx.AsyncClient, session: str) -> list[tuple[str, dict[str, Any]]]:
    body = {"Id": session, "Question": "HikariCP connection pool exhausted, requests time out"}
    async with client.stream("POST", "/api/chat", json=body) as r:
        assert r.status_code == 200
        return parse("".join([c async for c in r.aiter_text()]))


async def test_search_going_down_ends_every_stream_and_loses_no_audit_event(serve_app: dict[str, str]) -> None:
    work = tempfile.mkdtemp(prefix="raydiag-fault-")
    serve.run(
        SearchDeployment.options(name="search-fault", ray_actor_options={"num_cpus": 0}).bind(  # type: ignore[attr-defined]
            f"{work}/milvus.db", "kb", 512
        ),
        name="faultsearch",
        route_prefix=None,
    )
    cfg = parse_config(
        {
            "llm": {"backend": "scripted"},
            "audit": {"db_url": serve_app["db_url"], "spill_path": f"{work}/spill.jsonl"},
            "ingress": {"num_cpus": 0},
            # A call to a deleted deployment may wait for replicas that never come: the tool
            # timeout turns that into an error value quickly.
            "harness": {"stage_timeout_s": 10},
        },
        "fault-test",
        env={},
    )
    app = Ingress.options(name="ingress-fault", ray_actor_options={"num_cpus": 0}).bind(  # type: ignore[attr-defined]
        cfg,
        serve.get_deployment_handle("audit", app_name="raydiag"),
        None,
        serve.get_deployment_handle("embedder", app_name="raydiag"),
        serve.get_deployment_handle("search-fault", app_name="faultsearch"),
        "harness.pipeline:DiagnosisPipeline",
    )
    serve.run(app, name="faults", route_prefix="/faults")
    base = serve_app["base"] + "/faults"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            before = await asyncio.gather(*(_chat(client, f"fault-up-{i}") for i in range(3)))
            serve.delete("faultsearch")  # the search deployment is gone
            after = await asyncio.gather(*(_chat(client, f"fault-down-{i}") for i in range(5)))
            runs = before + after
            for events in runs:
                names = [n for n, _ in events]
                assert names[0] == "metadata" and names.count("done") == 1 and names[-1] == "done", names
            for events in after:
                content = next(d for n, d in events if n == "content")
                assert content["content_type"] == "SAFE_FALLBACK"  # no evidence: no diagnosis claimed
            for events in runs:
                meta = events[0][1]
                trace = (
                    await client.get(f"/api/diagnosis/{meta['session_id']}/trace", params={"runId": meta["run_id"]})
                ).json()
                s = trace["summary"]
                assert s["persisted"] == s["returned"] and s["timeline_contiguous"] and s["tokens_reconciled"]
                assert trace["timeline"][-1]["event_type"] == "RUN_FINISHED"
                tools = trace["toolInvocations"]
                if events in after:
                    assert tools, "the lookup was attempted"
                    details = tools[0]["retrieval_details"] or {}
                    assert tools[0]["status"] != "success" or details.get("evidence_status") == "ERROR"
    finally:
        serve.delete("faults")
