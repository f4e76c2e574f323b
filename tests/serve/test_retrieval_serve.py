"""The embedder and search deployments: batching through Ray and lookups over their handles."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from ray import serve

from deployments.config import parse_config
from deployments.ingress import _lookup

pytestmark = pytest.mark.slow


async def test_concurrent_embeds_form_batches(serve_app: dict[str, str]) -> None:
    handle = serve.get_deployment_handle("embedder", app_name="raydiag")
    before = await handle.stats.remote()
    results = await asyncio.gather(*(handle.embed.remote([f"question number {i}"]) for i in range(64)))
    assert all(r.shape == (1, 512) for r in results)
    assert np.allclose(np.linalg.norm(np.vstack(results), axis=1), 1.0, atol=1e-4)
    after = await handle.stats.remote()
    assert after["max_batch"] > 5 and after["batches"] - before["batches"] < 64


async def test_lookup_over_the_deployments(serve_app: dict[str, str]) -> None:
    cfg = parse_config({}, "test", env={})
    lookup = _lookup(
        cfg,
        serve.get_deployment_handle("embedder", app_name="raydiag"),
        serve.get_deployment_handle("search", app_name="raydiag"),
    )
    assert lookup is not None
    out = await lookup.lookup("MySQL connection pool exhausted HikariCP diagnosis", "call_1")
    assert out.evidence_status == "EVIDENCE_FOUND" and out.relevance_level == "PRECISE"
    assert out.agent_view["evidence"][0]["key"].startswith("hikaricp-pool-exhaustion")
