"""A real Alertmanager (Debian's ``prometheus-alertmanager`` 0.25, on 127.0.0.1, no gossip) delivers its
webhook to the service: the test posts an alert to Alertmanager's API, Alertmanager groups it and calls
``POST /api/alerts`` with a bearer key from its ``http_config``, a diagnosis runs on the alert's clock,
and its released report arrives at the configured notify URL. The resolved notice that follows
starts nothing."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import httpx
import pytest

from deployments.config import parse_config
from tests.prometheus_server import _free_port, running
from tests.serve.conftest import extra_ingress

pytestmark = [pytest.mark.slow, pytest.mark.prometheus]

KEY = "alert-key-42"


class Receiver:
    """The notify URL's other end: a plain HTTP server on 127.0.0.1 keeping each JSON body it gets."""

    def __init__(self) -> None:
        self.bodies: Queue[dict[str, Any]] = Queue()
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the stdlib calls it by this name
                length = int(self.headers.get("content-length", "0"))
                bodies.put(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/report"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def alert_stack(serve_app: dict[str, str]) -> Iterator[dict[str, Any]]:
    from ray import serve

    binary = shutil.which("prometheus-alertmanager")
    assert binary, "prometheus-alertmanager missing: `make prometheus` (part of `make test`) installs it"
    work = Path(tempfile.mkdtemp(prefix="raydiag-am-"))
    receiver = Receiver()
    cfg = parse_config(
        {
            "llm": {"backend": "scripted"},
            "auth": {"api_keys": {"sre-team": KEY}},
            "alerts": {"notify_url": receiver.url, "investigation_delay_s": 600},
            "audit": {"db_url": serve_app["db_url"], "spill_path": str(work / "spill.jsonl")},
            "ingress": {"num_cpus": 0},
        },
        "alerts-test",
        env={},
    )
    serve.run(extra_ingress("ingress-alerts", cfg), name="alerts", route_prefix="/alerts")
    base = serve_app["base"] + "/alerts"
    (work / "alertmanager.yml").write_text(
        f"""route:
  receiver: raydiag
  group_by: [alertname]
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
receivers:
  - name: raydiag
    webhook_configs:
      - url: {base}/api/alerts
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials: {KEY}
""",
        encoding="utf-8",
    )
    port = _free_port()
    am = f"http://127.0.0.1:{port}"
    cmd = [
        binary,
        f"--config.file={work / 'alertmanager.yml'}",
        f"--storage.path={work / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",  # no gossip on 0.0.0.0:9094
    ]
    try:
        with running(cmd, f"{am}/-/ready", work / "alertmanager.log"):
            yield {"base": base, "alertmanager": am, "receiver": receiver}
    finally:
        receiver.close()
        serve.delete("alerts")


def _delivered(am: str) -> float:
    """Alertmanager's own count of webhook notifications it delivered (its /metrics)."""
    text = httpx.get(f"{am}/metrics", timeout=5, trust_env=False).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith("alertmanager_notifications_total") and 'integration="webhook"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


async def _next_report(receiver: Receiver, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return receiver.bodies.get_nowait()
        except Empty:
            assert time.monotonic() < deadline, "no report reached the notify URL"
            await asyncio.sleep(0.2)


async def test_alertmanager_triggers_one_diagnosis_and_the_resolved_notice_none(alert_stack: dict[str, Any]) -> None:
    am, receiver = alert_stack["alertmanager"], alert_stack["receiver"]
    starts = datetime.now(UTC) - timedelta(hours=1)
    alert = {
        "labels": {"alertname": "PaymentHighErrorRate", "service": "payment-service", "namespace": "prod"},
        "annotations": {
            "summary": "payment-service 5xx ratio above 5%",
            "description": "HikariCP connection pool exhausted, requests time out",
        },
        "startsAt": starts.isoformat(),
    }
    async with httpx.AsyncClient(timeout=30, trust_env=False) as c:
        r = await c.post(f"{am}/api/v2/alerts", json=[alert])
        assert r.status_code == 200, r.text
        report = await _next_report(receiver, 90)
    assert report["alertnames"] == ["PaymentHighErrorRate"]
    # SmolLM2 decodes greedily: the one outcome it produces here is a report (no telemetry is connected).
    assert report["outcome"] == "SUCCESS", report
    assert report["content"]["content_type"] == "DIAGNOSIS_REPORT", report

    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=alert_stack["base"], timeout=30, headers=headers) as api:
        r = await api.get(
            f"/api/diagnosis/{report['sessionId']}/trace", params={"runId": report["runId"], "waitMs": 10_000}
        )
        assert r.status_code == 200, r.text
        trace = r.json()
        assert trace["summary"]["complete"] is True
        started = next(e for e in trace["timeline"] if e["event_type"] == "RUN_STARTED")["details"]
        assert started["origin"] == "alert"
        # Alertmanager sends startsAt; the run's clock is that + the investigation delay (10 min).
        as_of = datetime.fromisoformat(started["as_of"].replace("Z", "+00:00"))
        assert abs((as_of - (starts + timedelta(minutes=10))).total_seconds()) < 1
        assert "PaymentHighErrorRate" in trace["run"]["query"] and "payment-service" in trace["run"]["query"]

        # Resolved: Alertmanager tells the receiver (send_resolved), and nothing new starts.
        before = _delivered(am)
        async with httpx.AsyncClient(timeout=30, trust_env=False) as c:
            ended = {**alert, "endsAt": datetime.now(UTC).isoformat()}
            assert (await c.post(f"{am}/api/v2/alerts", json=[ended])).status_code == 200
        deadline = time.monotonic() + 60
        while _delivered(am) <= before:
            assert time.monotonic() < deadline, "Alertmanager did not deliver the resolved notice"
            await asyncio.sleep(0.5)
        runs = (await api.get(f"/api/diagnosis/{report['sessionId']}/runs")).json()
    assert [r["run_id"] for r in runs["runs"]] == [report["runId"]], runs
    assert receiver.bodies.empty()
