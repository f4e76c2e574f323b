"""The ingress autoscales on open streams: load at the HTTP port brings replicas up, and they come
back down when it stops (short delays so the test takes seconds, not minutes)."""

from __future__ import annotations

import asyncio
import tempfile
import time

import httpx
import pytest
from ray import serve

from deployments.app import ingress_options
from deployments.config import parse_config
from tests.serve.conftest import extra_ingress

pytestmark = pytest.mark.slow

APP, DEPLOYMENT = "autoscale", "ingress-auto"


def running_replicas() -> int:
    dep = serve.status().applications[APP].deployments[DEPLOYMENT]
    return int(dep.replica_states.get("RUNNING", 0))


async def test_ingress_scales_up_under_load_and_back_down(serve_app: dict[str, str]) -> None:
    cfg = parse_config(
        {
            "ingress": {
                "num_cpus": 0,  # the session cluster's CPUs are taken; replicas still are processes
                "autoscaling": {
                    "min_replicas": 1,
                    "max_replicas": 3,
                    "target_ongoing_requests": 2,
                    "upscale_delay_s": 1,
                    "downscale_delay_s": 2,
                    "metrics_interval_s": 0.5,
                    "look_back_period_s": 2,
                },
            },
            "audit": {"db_url": serve_app["db_url"], "spill_path": tempfile.mktemp(prefix="raydiag-spill-")},
        },
        "autoscale-test",
        env={},
    )

    opts = ingress_options(cfg)
    assert opts["autoscaling_config"]["max_replicas"] == 3 and "num_replicas" not in opts
    app = extra_ingress(DEPLOYMENT, cfg, "tests.fakes.slow_pipeline:SlowPipeline", **opts)
    serve.run(app, name=APP, route_prefix="/auto")
    try:
        assert running_replicas() == 1
        base = serve_app["base"] + "/auto"
        stop = asyncio.Event()
        done = 0

        async def client(n: int) -> None:
            nonlocal done
            async with httpx.AsyncClient(base_url=base, timeout=60) as c:
                while not stop.is_set():
                    body = {"Id": f"auto-{n}", "Question": "HikariCP pool exhausted?"}
                    async with c.stream("POST", "/api/chat", json=body) as r:
                        assert r.status_code == 200
                        text = "".join([chunk async for chunk in r.aiter_text()])
                    assert text.count("event: done") == 1
                    done += 1

        clients = [asyncio.create_task(client(i)) for i in range(12)]
        peak, deadline = 1, time.monotonic() + 90
        while time.monotonic() < deadline and peak < 2:
            await asyncio.sleep(1)
            peak = max(peak, running_replicas())
        stop.set()
        await asyncio.gather(*clients)
        assert peak >= 2, "the ingress did not scale up under 12 concurrent streams"
        assert done > 12

        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and running_replicas() > 1:  # noqa: ASYNC110 - polls Serve, no event
            await asyncio.sleep(1)
        assert running_replicas() == 1, "the ingress did not scale back down after the load stopped"
    finally:
        serve.delete(APP)
