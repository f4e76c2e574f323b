"""cluster.yaml is valid for `ray up` by Ray's own schema (nothing is launched)."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.conftest import REPO


def _load() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((REPO / "cluster.yaml").read_text())


def test_cluster_yaml_validates_with_rays_schema() -> None:
    from ray.autoscaler._private.util import prepare_config, validate_config

    cfg = _load()
    validate_config(prepare_config(copy.deepcopy(cfg)))
    types = cfg["available_node_types"]
    assert "GPU" not in types[cfg["head_node_type"]]["resources"]
    assert any(t["resources"].get("GPU") for t in types.values())


def test_a_broken_cluster_yaml_is_rejected() -> None:
    from ray.autoscaler._private.util import prepare_config, validate_config

    cfg = _load()
    cfg["available_node_types"]["gpu_worker"]["max_workers"] = "many"
    with pytest.raises(Exception):  # noqa: B017 - Ray raises jsonschema's ValidationError
        validate_config(prepare_config(cfg))
