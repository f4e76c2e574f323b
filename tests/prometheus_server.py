"""A real Prometheus server on 127.0.0.1 over a temporary TSDB backfilled with a Nezha day
(Debian's ``prometheus`` 2.42 and ``promtool``; ``make test`` installs them when missing), and the
helper that runs such a server (Alertmanager too) until it is ready and stops it by its PID."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from telemetry.openmetrics import write_nezha_openmetrics


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def binaries() -> tuple[str, str]:
    prom, tool = shutil.which("prometheus"), shutil.which("promtool")
    assert prom and tool, "prometheus/promtool missing: `make prometheus` (part of `make test`) installs them"
    return prom, tool


@contextmanager
def prometheus_with_day(day: Path, workdir: Path) -> Iterator[str]:
    """Backfill ``day`` into a fresh TSDB, serve it, yield the base URL; stop the server by its PID."""
    prom, tool = binaries()
    data = workdir / "day.om"
    write_nezha_openmetrics(day, data)
    tsdb = workdir / "tsdb"
    subprocess.run(
        [tool, "tsdb", "create-blocks-from", "openmetrics", str(data), str(tsdb)], check=True, capture_output=True
    )
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n", encoding="utf-8")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [
        prom,
        f"--config.file={config}",
        f"--storage.tsdb.path={tsdb}",
        "--storage.tsdb.retention.time=100y",  # the 2022 blocks would be deleted as too old otherwise
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    with running(cmd, f"{url}/-/ready", workdir / "prometheus.log"):
        yield url


@contextmanager
def running(cmd: list[str], ready_url: str, log_path: Path) -> Iterator[None]:
    """Start ``cmd``, wait until ``ready_url`` answers 200 (60 s), stop it by its PID afterwards."""
    log = log_path.open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while True:
            try:
                if httpx.get(ready_url, timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, log_path.read_text()[-2000:]
            assert time.time() < deadline, f"{Path(cmd[0]).name} did not become ready in 60 s"
            time.sleep(0.3)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
