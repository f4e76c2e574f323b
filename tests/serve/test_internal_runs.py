"""The internal run context on Ray Serve: what the RCA evaluation (and the alert webhook) use to give
a run its clock and telemetry. Reached through the ingress's Ray handle only; /api/chat refuses the
fields; the run is an ordinary audited run whose trace the HTTP API replays."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from telemetry.settings import TelemetrySettings

pytestmark = pytest.mark.slow

T0 = 1661145489.0  # 2022-08-22 05:18:09, the currencyservice cpu_contention fault
QUESTION = "Users of OnlineBoutique see errors or slow responses since 05:18 UTC on 2022-08-22. Find the root cause."


async def test_an_internal_run_is_an_audited_run(
    serve_app: dict[str, str], scripted_app: dict[str, str], nezha_day: Path
) -> None:
    from ray import serve

    handle = serve.get_deployment_handle("ingress-scripted", "scripted")
    telemetry = TelemetrySettings(log_roots=[], metric_roots=[], nezha_days=[str(nezha_day)])
    options = {"as_of": T0 + 300, "telemetry": telemetry.model_dump(), "origin": "eval"}
    result = await handle.diagnose_internal.remote("internal-1", QUESTION, options)
    events = result["events"]
    assert events[-1]["event"] == "done"
    content = next(e for e in events if e["event"] == "content")
    assert content["content_type"] == "DIAGNOSIS_REPORT", content
    assert content["payload"]["root_causes"][0]["component"] == "currencyservice"
    run_id = next(e["run_id"] for e in events if e["event"] == "metadata")
    assert result["totals"]["status"] == "SUCCEEDED" and result["totals"]["total_token_count"] is not None

    # An internal run belongs to no tenant: the app without API keys (same audit trail) replays it.
    async with httpx.AsyncClient(base_url=serve_app["base"], timeout=60) as client:
        trace = (await client.get("/api/diagnosis/internal-1/trace", params={"runId": run_id})).json()
    started = next(e for e in trace["timeline"] if e["event_type"] == "RUN_STARTED")
    assert started["details"]["as_of"] == "2022-08-22T05:23:09Z" and started["details"]["origin"] == "eval"
    assert trace["toolInvocations"][0]["tool_name"] == "rank_anomalies"

    headers = {"Authorization": f"Bearer {scripted_app['key']}"}
    async with httpx.AsyncClient(base_url=scripted_app["base"], headers=headers, timeout=60) as client:
        # A caller cannot set the clock or the dataset over HTTP.
        body = {"Id": "internal-2", "Question": QUESTION, "as_of": T0, "telemetry": {"nezha_days": ["/"]}}
        refused = await client.post("/api/chat", json=body)
        assert refused.status_code == 422
