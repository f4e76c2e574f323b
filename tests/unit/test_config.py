from __future__ import annotations

import os
from pathlib import Path

import pytest

from deployments.config import AppConfig, ConfigError, load_config, parse_config
from tests.conftest import REPO


@pytest.mark.parametrize("path", sorted((REPO / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_validate(path: Path) -> None:
    assert isinstance(load_config(path, env={}), AppConfig)


def test_unknown_key_names_file_field_and_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("audit:\n  batch_sise: 10\n")
    with pytest.raises(ConfigError) as err:
        load_config(bad, env={})
    msg = str(err.value)
    assert str(bad) in msg and "audit.batch_sise" in msg and "Extra inputs are not permitted" in msg


def test_bad_value_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("server:\n  port: 70000\n")
    with pytest.raises(ConfigError, match=r"server\.port: Input should be less than 65536"):
        load_config(bad, env={})


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "nope.yaml", env={})
    broken = tmp_path / "broken.yaml"
    broken.write_text("server: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(broken, env={})
    listy = tmp_path / "list.yaml"
    listy.write_text("- 1\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(listy, env={})


def test_environment_overrides() -> None:
    cfg = parse_config(
        {"server": {"port": 8000}},
        "inline",
        env={
            "RAYDIAG_DB_URL": "mysql+pymysql://root@127.0.0.1:3306/test",
            "RAYDIAG_MILVUS_URI": "http://127.0.0.1:19530",
            "RAYDIAG_PORT": "8123",
        },
    )
    assert cfg.audit.db_url.startswith("mysql+pymysql://")
    assert cfg.search.milvus_uri == "http://127.0.0.1:19530"
    assert cfg.server.port == 8123
    with pytest.raises(ConfigError, match=r"server\.port"):
        parse_config({}, "inline", env={"RAYDIAG_PORT": "eighty"})


def test_every_field_is_described() -> None:
    def walk(model: type) -> list[str]:
        missing = []
        for name, field in model.model_fields.items():  # type: ignore[attr-defined]
            if not field.description:
                missing.append(f"{model.__name__}.{name}")
            ann = field.annotation
            if isinstance(ann, type) and hasattr(ann, "model_fields"):
                missing += walk(ann)
        return missing

    assert walk(AppConfig) == []


def test_direct_ingress_reaches_the_environment_ray_starts_with(monkeypatch: pytest.MonkeyPatch) -> None:
    from deployments.runtime import ray_env

    monkeypatch.setattr(os, "environ", dict(os.environ))  # ray_env writes here; the real one stays as it was
    on = parse_config({"server": {"direct_ingress": True, "direct_ingress_ports": [31500, 31510]}}, "t", env={})
    ray_env(on)
    assert os.environ["RAY_SERVE_ENABLE_DIRECT_INGRESS"] == "1"
    assert os.environ["RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT"] == "31500"
    assert os.environ["RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT"] == "31510"
    # Off is written out too: a process that started a direct-ingress Ray before must not leak it.
    ray_env(parse_config({}, "t", env={}))
    assert os.environ["RAY_SERVE_ENABLE_DIRECT_INGRESS"] == "0"


def test_direct_ingress_port_range_is_checked() -> None:
    with pytest.raises(ConfigError, match="direct_ingress_ports"):
        parse_config({"server": {"direct_ingress_ports": [31000, 30000]}}, "t", env={})


def test_the_engine_dtype_follows_the_cpu_features(tmp_path: Path) -> None:
    from deployments.config import LLMSettings
    from deployments.llm import cpu_flags, engine_dtype

    auto = LLMSettings(dtype="cpu-features")
    assert engine_dtype(auto, {"avx2", "avx512f", "avx512_bf16"}) == "float32"  # this project's AMD EPYC
    assert engine_dtype(auto, {"avx512f", "amx_bf16", "amx_tile"}) == "bfloat16"  # a Xeon with AMX
    assert engine_dtype(LLMSettings(dtype="float32"), {"amx_bf16"}) == "float32"  # a set dtype is kept
    assert engine_dtype(LLMSettings(dtype="cpu-features", device="cuda"), set()) == "bfloat16"
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 amx_bf16\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert cpu_flags(info) == {"fpu", "sse", "avx2", "amx_bf16"}
    assert cpu_flags(tmp_path / "missing") == set()
