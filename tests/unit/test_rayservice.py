"""deployments/k8s/rayservice.yaml is a KubeRay RayService whose Serve config Serve itself accepts and
whose application is configs/serve.cluster.yaml as the image holds it: it builds, its GPU replicas fit
the worker group, the workers' readiness probe is a route the app serves (the head has none: KubeRay
submits the application only once the head is ready), and every variable it sets is one raydiag reads.
Nothing is started; no Kubernetes API is asked (there is none here)."""

from __future__ import annotations

import math
from pathlib import PurePosixPath
from typing import Any

import yaml

from deployments.app import app_builder
from deployments.config import ENV_OVERRIDES, load_config
from tests.conftest import REPO

K8S = REPO / "deployments" / "k8s"
IMAGE_ROOT = PurePosixPath("/opt/raydiag")


def _service() -> dict[str, Any]:
    return dict(yaml.safe_load((K8S / "rayservice.yaml").read_text()))


def _serve_config() -> dict[str, Any]:
    return dict(yaml.safe_load(_service()["spec"]["serveConfigV2"]))


def _local(image_path: str) -> str:
    """A path in the image, as it is in this checkout (the Dockerfile copies the repository there)."""
    return str(REPO / PurePosixPath(image_path).relative_to(IMAGE_ROOT))


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec["template"]["spec"]["containers"])


def test_serve_accepts_the_serve_config_and_the_app_builds() -> None:
    from ray.serve._private.build_app import build_app
    from ray.serve.schema import ServeDeploySchema

    svc = _service()
    assert (svc["apiVersion"], svc["kind"]) == ("ray.io/v1", "RayService")
    schema = ServeDeploySchema.model_validate(_serve_config())
    (app,) = schema.applications
    assert app.import_path == "deployments.app:app_builder"
    built = build_app(app_builder({"config": _local(app.args["config"])}), name=app.name).deployments
    assert {d.name for d in built} == {"ingress", "audit", "llm", "embedder", "search"}


def test_the_gpu_replicas_fit_the_worker_group() -> None:
    from ray.serve._private.build_app import build_app

    cluster = _service()["spec"]["rayClusterConfig"]
    assert cluster["headGroupSpec"]["rayStartParams"]["num-gpus"] == "0"  # nothing GPU lands on the head
    (group,) = cluster["workerGroupSpecs"]
    gpus_per_node = int(_containers(group)[0]["resources"]["limits"]["nvidia.com/gpu"])
    app = _serve_config()["applications"][0]
    deployments = build_app(app_builder({"config": _local(app["args"]["config"])}), name="raydiag").deployments
    need_min = need_max = 0.0
    for d in deployments:
        gpus = float(d.ray_actor_options.get("num_gpus") or 0)
        scaling = d._deployment_config.autoscaling_config
        low, high = (scaling.min_replicas, scaling.max_replicas) if scaling else (d.num_replicas, d.num_replicas)
        # A replica needing a whole GPU takes one; fractional ones pack onto shared GPUs.
        need_min += math.ceil(low * gpus) if gpus < 1 else low * gpus
        need_max += math.ceil(high * gpus) if gpus < 1 else high * gpus
    assert need_min <= group["minReplicas"] * gpus_per_node
    assert need_max <= group["maxReplicas"] * gpus_per_node
    assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]


def test_the_workers_readiness_is_a_route_the_app_serves_and_the_head_has_none() -> None:
    """KubeRay submits the Serve application once the head pod is ready: a head gated on /readyz (which
    needs the application) would never become ready. The workers' proxies take traffic once it is."""
    cluster = _service()["spec"]["rayClusterConfig"]
    head = _containers(cluster["headGroupSpec"])[0]
    assert not {"readinessProbe", "livenessProbe", "startupProbe"} & set(head)
    (worker,) = [_containers(g)[0] for g in cluster["workerGroupSpecs"]]
    port = _serve_config()["http_options"]["port"]
    assert {"containerPort": port, "name": "serve"} in worker["ports"]
    probe = worker["readinessProbe"]["httpGet"]
    assert probe == {"path": "/readyz", "port": port}
    from deployments.http_api import create_api

    async def run_chat(*_: Any) -> Any:  # pragma: no cover - not called
        yield None

    async def flush() -> bool:  # pragma: no cover - not called
        return True

    app = create_api(run_chat, None, lambda r: None, flush, 65536)  # type: ignore[arg-type]
    assert {"/readyz", "/livez"} <= {getattr(r, "path", None) for r in app.routes}


def test_the_environment_is_what_raydiag_reads_and_models_are_mounted() -> None:
    cluster = _service()["spec"]["rayClusterConfig"]
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    for group in groups:
        names = {e["name"] for e in _containers(group)[0]["env"]}
        assert names <= set(ENV_OVERRIDES) | {"RAYDIAG_API_KEYS"}
        assert {"RAYDIAG_DB_URL", "RAYDIAG_API_KEYS"} <= names  # secrets come from the cluster, not the file
    app = _serve_config()["applications"][0]
    cfg = load_config(_local(app["args"]["config"]), env={})
    (worker,) = cluster["workerGroupSpecs"]
    mounts = [m["mountPath"] for m in _containers(worker)[0]["volumeMounts"]]
    for model in (cfg.llm.model, cfg.search.bge_m3_model):
        assert any(str(model).startswith(m + "/") for m in mounts), model


def test_the_image_holds_what_the_service_reads() -> None:
    lines = (K8S / "Dockerfile").read_text().splitlines()
    assert f"WORKDIR {IMAGE_ROOT}" in lines
    copied = {ln.split()[-2] for ln in lines if ln.startswith("COPY")}
    packages = ["deployments", "harness", "rag", "audit", "telemetry"]  # pyproject's packages
    assert set(packages) | {"configs"} <= copied
    ray_version = next(ln for ln in lines if ln.startswith("FROM")).split(":")[1].split("-")[0]
    import ray

    assert ray_version == ray.__version__ == _service()["spec"]["rayClusterConfig"]["rayVersion"]
