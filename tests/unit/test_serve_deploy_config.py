"""configs/serve.cluster.yaml is a valid `serve deploy` file whose app builds with the resources and
autoscaling the cluster needs; nothing is started."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from deployments.app import app_builder
from deployments.config import ConfigError, load_config
from tests.conftest import REPO

CLUSTER = REPO / "configs" / "serve.cluster.yaml"


def _built() -> dict[str, Any]:
    from ray.serve._private.build_app import build_app

    data = yaml.safe_load(CLUSTER.read_text())
    app = app_builder(data["applications"][0]["args"])
    return {d.name: d for d in build_app(app, name="raydiag").deployments}


def test_the_cluster_file_is_a_serve_deploy_file() -> None:
    from ray.serve.schema import ServeDeploySchema

    schema = ServeDeploySchema.model_validate(yaml.safe_load(CLUSTER.read_text()))
    assert schema.applications[0].import_path == "deployments.app:app_builder"


def test_the_cluster_app_has_gpus_autoscaling_and_bge_m3() -> None:
    deps = _built()
    assert set(deps) == {"ingress", "audit", "llm", "embedder", "search"}
    ingress = deps["ingress"]._deployment_config.autoscaling_config
    assert ingress.min_replicas == 2 and ingress.max_replicas == 8 and ingress.target_ongoing_requests == 32
    assert deps["llm"].ray_actor_options["num_gpus"] == 1
    assert deps["llm"]._deployment_config.autoscaling_config.max_replicas == 4
    emb = deps["embedder"].ray_actor_options
    # BGE-M3 through plain transformers: the main environment, no runtime_env of its own.
    assert emb["num_gpus"] == 0.25 and "runtime_env" not in emb
    assert deps["embedder"].init_args[5:] == ("transformers", 8192)
    assert deps["search"].num_replicas == 2  # a Milvus server: several clients
    assert deps["audit"].num_replicas == 1  # one owner of the audit DB connection


def test_the_same_file_serves_raydiag_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = load_config(CLUSTER, env={"RAYDIAG_DB_URL": "mysql+pymysql://u@db:3306/raydiag"})
    assert cfg.server.host == "0.0.0.0" and cfg.server.port == 8000  # from http_options
    assert cfg.audit.db_url == "mysql+pymysql://u@db:3306/raydiag"
    assert cfg.search.embedder == "bge-m3" and cfg.llm.device == "cuda"


def test_a_deploy_file_without_our_app_is_rejected(tmp_path: Any) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("applications:\n  - name: x\n    import_path: other.module:app\n")
    with pytest.raises(ConfigError, match=r"args\.raydiag"):
        load_config(bad, env={})
