"""A real Prometheus (Debian's 2.42 on 127.0.0.1) scrapes the service's GET /metrics while the test
runs chats, and a PromQL query sees the runs counter move by exactly what the test did. The series come
through Ray's per-node metrics agent (the session cluster runs with the dashboard off)."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from deployments.sse import parse
from tests.prometheus_server import _free_port, binaries, running

pytestmark = [pytest.mark.slow, pytest.mark.prometheus]


def _runs_now(text: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("raydiag_runs_total{") and 'flow="CHAT"' in line
    )


async def test_prometheus_sees_the_runs_counter_move(scripted_app: dict[str, str]) -> None:
    base, key = scripted_app["base"], scripted_app["key"]
    prom, _ = binaries()
    work = Path(tempfile.mkdtemp(prefix="raydiag-prom-"))
    host = base.split("//", 1)[1].split("/", 1)[0]
    prefix = base.split(host, 1)[1]
    (work / "prometheus.yml").write_text(
        f"""global:
  scrape_interval: 2s
  scrape_timeout: 2s
scrape_configs:
  - job_name: raydiag
    metrics_path: {prefix}/metrics
    static_configs:
      - targets: ["{host}"]
""",
        encoding="utf-8",
    )
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [prom, f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'tsdb'}"]
    cmd.append(f"--web.listen-address=127.0.0.1:{port}")
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        first = await c.get("/metrics")  # open, like /healthz: no key
        assert first.status_code == 200 and first.headers["content-type"].startswith("text/plain")
        with running(cmd, f"{url}/-/ready", work / "prometheus.log"):

            async def query() -> float | None:
                r = await c.get(f"{url}/api/v1/query", params={"query": 'sum(raydiag_runs_total{flow="CHAT"})'})
                result = r.json()["data"]["result"]
                return float(result[0]["value"][1]) if result else None

            async def settled() -> float:
                """The counter once Ray's agent (it reports every 10 s) and Prometheus have caught up:
                unchanged for 15 s; no series at all is 0 (no run on this node yet)."""
                last, since = await query(), time.monotonic()
                deadline = time.monotonic() + 120
                while time.monotonic() - since < 15:
                    now = await query()
                    if now != last:
                        last, since = now, time.monotonic()
                    assert time.monotonic() < deadline, "the runs counter never settled in Prometheus"
                    await asyncio.sleep(1)
                return last or 0.0

            before = await settled()
            for i in range(3):
                body = {"Id": f"prom-{i}", "Question": "HikariCP connection pool exhausted, requests time out"}
                async with c.stream("POST", "/api/chat", json=body, headers=headers) as r:
                    assert r.status_code == 200
                    events = parse("".join([chunk async for chunk in r.aiter_text()]))
                assert events[-1][0] == "done"
            deadline = time.monotonic() + 90
            while (await query() or 0.0) < before + 3:
                if time.monotonic() > deadline:
                    targets = (await c.get(f"{url}/api/v1/targets")).json()["data"]["activeTargets"]
                    served = (await c.get("/metrics")).text
                    raise AssertionError(
                        f"Prometheus never saw the 3 runs (before {before}); scrape: "
                        f"{[(t['health'], t['lastError']) for t in targets]}; /metrics: {served[:1500]}"
                    )
                await asyncio.sleep(1)
            after = await settled()

            async def series(promql: str) -> list[dict[str, object]]:
                r = await c.get(f"{url}/api/v1/query", params={"query": promql})
                return list(r.json()["data"]["result"])

            # The gauges are set on a clock: present, and each ingress's build labels (this node runs the
            # session app's ingress beside the scripted one) on one info series each, at 1.
            (info,) = await series('raydiag_build_info{model="scripted"}')
            assert info["value"][1] == "1" and info["metric"]["version"]  # type: ignore[index]
            assert await series("raydiag_runs_admitted") and await series("raydiag_audit_pending_records")
            # Counted by route and status: the three chats (200) are among the chat route's responses.
            (chats,) = await series('sum(raydiag_http_requests_total{route="chat",status="200"})')
            assert float(chats["value"][1]) >= 3  # type: ignore[index]
            # Never incremented, still a series (at 0): an alert on its rate has something to evaluate.
            assert await series('raydiag_admission_rejections_total{limit="tenant"}')
        # The endpoint itself says the same as Prometheus.
        assert _runs_now((await c.get("/metrics")).text) == after
    assert after == before + 3  # nothing else ran on this node meanwhile: exactly the test's runs
