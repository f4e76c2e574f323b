"""Starting or joining Ray on loopback, with the settings measured to work here (DESIGN.md §6)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import ray
from ray import serve

from deployments.config import AppConfig

log = logging.getLogger(__name__)


def ray_env(cfg: AppConfig) -> None:
    """Environment Ray reads at start; set explicitly so nothing depends on the shell."""
    # Ray 2.60 turns token auth on when a token file exists and the mode is unset.
    os.environ["RAY_AUTH_MODE"] = cfg.ray.auth_mode
    # Keeps a local Ray on 127.0.0.1 instead of the host's address.
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Serve reads these in every process it starts, so they are set (both ways, explicitly) before Ray
    # starts: a process that started a direct-ingress Ray earlier must not leak it into the next one.
    os.environ["RAY_SERVE_ENABLE_DIRECT_INGRESS"] = "1" if cfg.server.direct_ingress else "0"
    lo, hi = cfg.server.direct_ingress_ports
    os.environ["RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT"] = str(lo)
    os.environ["RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT"] = str(hi)


def start_ray(cfg: AppConfig) -> None:
    """Join ``ray.address`` or start a private local Ray bound to loopback."""
    if ray.is_initialized():
        return
    ray_env(cfg)
    if cfg.ray.address:
        ray.init(address=cfg.ray.address, log_to_driver=True)
        return
    temp_dir = Path(cfg.ray.temp_dir).resolve()
    temp_dir.mkdir(parents=True, exist_ok=True)
    ray.init(
        num_cpus=cfg.ray.num_cpus,
        include_dashboard=False,
        _temp_dir=str(temp_dir),
        _node_ip_address="127.0.0.1",
        # The project's packages are importable from the working tree in every worker.
        runtime_env={"env_vars": {"RAY_AUTH_MODE": cfg.ray.auth_mode}},
    )


def start_serve(cfg: AppConfig) -> None:
    serve.start(http_options={"host": cfg.server.host, "port": cfg.server.port})
