"""A real Prometheus server on 127.0.0.1 over a temporary TSDB backfilled with a Nezha day
(Debian's ``prometheus`` 2.42 and ``promtool``; ``make test`` installs them when missing)."""

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
    log = (workdir / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            prom,
            f"--config.file={config}",
            f"--storage.tsdb.path={tsdb}",
            "--storage.tsdb.retention.time=100y",  # the 2022 blocks would be deleted as too old otherwise
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (workdir / "prometheus.log").read_text()[-2000:]
            assert time.time() < deadline, "prometheus did not become ready in 60 s"
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
