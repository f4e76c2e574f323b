"""The BGE-M3 embedder as a Ray Serve deployment, both runtimes: plain transformers in the main
environment, and FlagEmbedding in its own interpreter (runtime_env py_executable): batching, dense +
sparse outputs, each replica really running in the environment it should."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from ray import serve

from deployments.app import embedder_app
from rag.settings import SearchSettings
from tests.conftest import BGE_PYTHON

pytestmark = pytest.mark.slow


RUNTIMES = {
    # runtime: (interpreter, transformers major version, backend class)
    "transformers": (sys.executable, "5.", "TransformersBgeM3Embedder"),
    "flagembedding": (str(BGE_PYTHON), "4.", "BgeM3Embedder"),
}


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
async def test_bge_m3_deployment_batches_dense_and_sparse(
    serve_app: dict[str, str], tiny_bge_m3: Path, runtime: str
) -> None:
    executable, major, backend = RUNTIMES[runtime]
    settings = SearchSettings(
        embedder="bge-m3",
        bge_m3_runtime=runtime,  # type: ignore[arg-type]
        bge_m3_model=str(tiny_bge_m3),
        bge_m3_python=str(BGE_PYTHON),
        embedder_device="cpu",
        embedder_num_cpus=0,  # the session cluster's CPUs are taken by the main app
        embed_max_batch_size=16,
        embed_batch_wait_s=0.05,
    )
    handle = serve.run(embedder_app(settings), name="bge", route_prefix=None)
    try:
        info = await handle.info.remote()
        assert info == {"dim": 32, "sparse": True, "backend": backend, "model": "bge-m3"}
        python = await handle.interpreter.remote()
        assert python["executable"] == executable and python["transformers"].startswith(major)
        texts = [f"database connection pool timeout {i}" for i in range(64)]
        results = await asyncio.gather(*(handle.encode.remote([t]) for t in texts))
        assert all(r.dense.shape == (1, 32) and r.lexical and r.lexical[0] for r in results)
        assert all(isinstance(k, int) and isinstance(v, float) for r in results for k, v in r.lexical[0].items())
        stats = await handle.stats.remote()
        assert stats["max_batch"] > 5 and stats["batches"] < 64
    finally:
        serve.delete("bge")
